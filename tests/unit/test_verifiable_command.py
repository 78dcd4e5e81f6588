"""workloads/verifiable.py: the JVM's command line, its config files, and what VerifiableConsumer cannot do."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.components import install, versions
from oracle.protocols import GENERATIONS
from runtime.errors import SetupError
from workloads.driver import MemberSpec, protocol_fields
from workloads.verifiable import ASSIGNOR_CLASSES, LOG_MARK, MAIN_CLASS, JavaSettings, command, unsupported


@pytest.fixture
def spec(tmp_path) -> MemberSpec:
    return MemberSpec(
        member="consumer-2",
        incarnation=3,
        history=str(tmp_path / "history.jsonl"),
        bootstrap_servers="127.0.0.1:9092",
        group="smoke",
        topics=["events"],
        **protocol_fields(GENERATIONS["classic-eager"]),
        assignor="range",
        commit="sync",
        processing_ms=1,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=300000,
        control_file=str(tmp_path / "consumer-2.json"),
        settings=JavaSettings(kafka_line="3.9"),
    )


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_command_runs_verifiable_consumer_with_the_members_settings(spec, tmp_path):
    argv = command(spec, "/tools/a.jar:/tools/b.jar", tmp_path)
    assert argv[0] == "java" and _option(argv, "-cp") == "/tools/a.jar:/tools/b.jar"
    assert argv[argv.index("-cp") + 2] == MAIN_CLASS
    assert _option(argv, "--bootstrap-server") == "127.0.0.1:9092"
    assert _option(argv, "--group-id") == "smoke" and _option(argv, "--topic") == "events"
    assert _option(argv, "--session-timeout") == "6000" and _option(argv, "--reset-policy") == "earliest"
    assert _option(argv, "--assignment-strategy") == "org.apache.kafka.clients.consumer.RangeAssignor"
    assert "--verbose" in argv  # record_data lines: exact offset ranges
    assert "--enable-autocommit" not in argv and "--group-instance-id" not in argv
    props_file = tmp_path / "consumer-2-3.consumer.properties"
    props = dict(line.split("=", 1) for line in props_file.read_text().splitlines())
    assert props == {
        "client.id": "consumer-2",
        "heartbeat.interval.ms": "1000",
        "max.poll.interval.ms": "300000",
        "auto.commit.interval.ms": "1000",
        "max.poll.records": "500",
        "metadata.max.age.ms": "5000",
    }
    assert _option(argv, "--consumer.config") == str(tmp_path / "consumer-2-3.consumer.properties")


def test_both_log_backends_get_a_config_that_writes_coordinator_lines_to_stdout(spec, tmp_path):
    argv = command(spec, "cp", tmp_path)
    log4j1 = (tmp_path / "consumer-2-3.log4j.properties").read_text()
    log4j2 = (tmp_path / "consumer-2-3.log4j2.properties").read_text()
    assert f"-Dlog4j.configuration=file:{tmp_path / 'consumer-2-3.log4j.properties'}" in argv
    assert f"-Dlog4j2.configurationFile={tmp_path / 'consumer-2-3.log4j2.properties'}" in argv
    assert "Target=System.out" in log4j1 and "target = SYSTEM_OUT" in log4j2
    assert LOG_MARK in log4j1 and LOG_MARK in log4j2
    assert "internals.ConsumerCoordinator=DEBUG" in log4j1
    assert "internals.ConsumerRebalanceListenerInvoker=INFO" in log4j1


@pytest.mark.parametrize(
    "protocol, assignor, commit, expect",
    [
        ("classic-static", "range", "sync", ["--group-instance-id", "smoke-consumer-2"]),
        ("classic-eager", "roundrobin", "auto", ["--enable-autocommit"]),
        ("classic-cooperative", "cooperative-sticky", "sync", []),
    ],
)
def test_protocol_assignor_and_commit_mode_map_to_options(spec, tmp_path, protocol, assignor, commit, expect):
    argv = command(
        replace(spec, **protocol_fields(GENERATIONS[protocol]), assignor=assignor, commit=commit), "cp", tmp_path
    )
    assert _option(argv, "--assignment-strategy") == ASSIGNOR_CLASSES[assignor]
    tail = argv[argv.index("--verbose") + 1 :]
    assert tail == expect


def test_what_verifiable_consumer_cannot_do_is_refused(spec):
    assert unsupported(spec) == []
    assert "one topic" in unsupported(replace(spec, topics=["events", "other"]))[0]
    assert "one topic" in unsupported(replace(spec, topics=["^events.*"]))[0]
    assert "never before processing" in unsupported(replace(spec, commit="before-processing"))[0]
    assert "uniform" in unsupported(replace(spec, assignor="uniform"))[0]


def test_tools_pom_pins_kafka_tools_of_the_same_release_and_the_slf4j_binding():
    for tested in versions.TESTED_KAFKA_RELEASES:
        release = versions.kafka_release(tested)
        pom = install._kafka_pom(release, versions.KAFKA_TOOLS_ARTIFACT)
        assert f"<artifactId>kafka-tools</artifactId><version>{tested}</version>" in pom
        for _, artifact, version in release.slf4j_bindings:
            assert f"<artifactId>{artifact}</artifactId><version>{version}</version>" in pom


def test_kafka_tools_before_setup_says_to_run_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    with pytest.raises(
        SetupError, match=r"Kafka tools 4\.1\.1 .*not installed\. Run `rebalance-lab setup --kafka 4\.1\.1`"
    ):
        install.kafka_tools("4.1")
    with pytest.raises(SetupError, match=r"Kafka 2\.8 is older than the supported range"):
        install.kafka_tools("2.8")
