"""harness/scenario/: shipped scenarios load; bad ones are explained as FILE: key.path: reason."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness.scenario import load_scenario
from runtime.errors import EXIT_BAD_INPUT, ScenarioError

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

MINIMAL = {
    "name": "t",
    "duration_s": 30,
    "cluster": {"kafka": "3.9", "brokers": 3},
    "topics": [{"name": "events", "partitions": 6}],
    "workload": {"consumers": 3},
    "faults": [{"kind": "pause", "target": "consumer-2", "at_s": 5, "duration_s": 10}],
}


def write(tmp_path: Path, data=None, text: str | None = None) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return path


def problems_of(tmp_path: Path, change) -> tuple[ScenarioError, Path]:
    data = copy.deepcopy(MINIMAL)
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return info.value, path


def test_shipped_scenarios_load():
    smoke = load_scenario(SCENARIOS / "smoke.yaml")
    assert smoke.name == "smoke" and smoke.cluster.zookeeper_mode
    assert [(f.kind, f.target, f.at_s) for f in smoke.faults] == [("pause", "consumer-2", 8), ("crash", "broker-2", 26)]
    assert smoke.checks["convergence"] == {"within_s": 60}
    faulty = load_scenario(SCENARIOS / "faulty-consumer.yaml")
    assert faulty.workload.commit == "before-processing"
    assert faulty.faults[0].signal == "SIGKILL" and faulty.faults[0].restart_after_s is None


def test_minimal_scenario_loads_with_defaults(tmp_path):
    s = load_scenario(write(tmp_path, MINIMAL))
    assert s.workload.effective_assignor == "range"
    assert (s.workload.warmup, s.workload.warmup_timeout_s) == ("group-formed", 60)
    assert s.fault_targets() == [
        "consumer-1",
        "consumer-2",
        "consumer-3",
        "broker-1",
        "broker-2",
        "broker-3",
        "zookeeper-1",
        "producer",
        "coordinator",
    ]


BAD_VALUES = [
    (lambda d: d["workload"].update(consumerz=3), "workload.consumerz", "unknown key"),
    (lambda d: d["workload"].update(consumers="many"), "workload.consumers", "must be a whole number, got 'many'"),
    (lambda d: d["topics"][0].update(partitions=0), "topics[1].partitions", "must be at least 1, got 0"),
    (lambda d: d["topics"][0].update(name="."), "topics[1].name", "Kafka refuses a topic named '.'"),
    (lambda d: d["topics"][0].update(name="__consumer_offsets"), "topics[1].name", "one of Kafka's internal topics"),
    (lambda d: d["topics"].append({**d["topics"][0], "partitions": 2}), "topics[2].name", "is declared twice"),
    (
        lambda d: d.update(topics=[{"name": "a_b", "partitions": 1}, {"name": "a.b", "partitions": 1}]),
        "topics[2].name",
        "'a.b' collides with topic 'a_b' ('.' and '_' are one to Kafka)",
    ),
    (
        lambda d: d["faults"].append({"kind": "partition", "target": "consumer-1", "at_s": 1}),
        "faults[2].kind",
        "unknown fault kind 'partition'",
    ),
    (lambda d: d["faults"][0].pop("kind"), "faults[1].kind", "missing"),
    (lambda d: d["faults"][0].pop("duration_s"), "faults[1].duration_s", "missing: this key is required"),
    (lambda d: d["faults"][0].update(target="consumer-9"), "faults[1].target", "no process 'consumer-9'"),
    (
        lambda d: (d["cluster"].update(kafka="4.1"), d["faults"][0].update(target="zookeeper-1")),
        "faults[1].target",
        "no process 'zookeeper-1'",
    ),
    (lambda d: d["faults"][0].update(at_s=45), "faults[1].at_s", "not within duration_s (30.0s)"),
    (
        lambda d: d["faults"].append(
            {"kind": "create-topic", "topic": "__consumer_offsets", "partitions": 1, "at_s": 1}
        ),
        "faults[2].topic",
        "one of Kafka's internal topics",
    ),
    (
        lambda d: (
            d["faults"].append({"kind": "create-topic", "topic": "even.ts", "partitions": 1, "at_s": 1})
            or d["topics"].append({"name": "even_ts", "partitions": 1})
        ),
        "faults[2].topic",
        "collides with topic 'even_ts'",
    ),
    (
        lambda d: (
            d["faults"].append({"kind": "scale", "consumers": 4, "at_s": 8})
            or d["faults"][0].update(target="consumer-4")
        ),
        "faults[1].target",
        "consumer-4 is not running at workload+5s (the group's members then: consumer-1, consumer-2, consumer-3)",
    ),
    (
        lambda d: d["faults"].insert(0, {"kind": "scale", "consumers": 1, "at_s": 1}),
        "faults[2].target",
        "consumer-2 is not running at workload+5s (the group's members then: consumer-1)",
    ),
    (
        lambda d: d["faults"].append({"kind": "crash", "target": "consumer-2", "at_s": 2, "restart_after_s": 8}),
        "faults[1].target",
        "consumer-2 is down at workload+5s: faults[2] crashed it at workload+2s and restarts it at workload+10s",
    ),
    (
        lambda d: (
            d["cluster"].update(brokers=1)
            or d["faults"].append(
                {"kind": "network", "target": "broker-1", "link": "brokers", "at_s": 1, "duration_s": 2}
            )
        ),
        "faults[2].link",
        "'brokers' is not a link of broker-1 (links: zookeeper, clients)",
    ),
    (
        lambda d: d["faults"].extend(
            [
                {"kind": "add-partitions", "topic": "events", "partitions": 7, "at_s": 9},
                {"kind": "add-partitions", "topic": "events", "partitions": 8, "at_s": 2},
            ]
        ),
        "faults[2].partitions",
        "7 is not more than the 8 partitions events has",
    ),
    (lambda d: d.update(seed=True), "seed", "must be a whole number, got true"),
    (
        lambda d: d["cluster"].update(kafka="4.1", zookeeper_nodes=3),
        "cluster.zookeeper_nodes",
        "Kafka 4.1.1 runs without ZooKeeper (KRaft)",
    ),
    (lambda d: d.update(checks={"no-losss": {}}), "checks.no-losss", "unknown check"),
    (
        lambda d: d.update(checks={"convergence": {"within": 5}}),
        "checks.convergence",
        "has no option 'within'; it accepts: within_s",
    ),
    (
        lambda d: d["workload"].update(protocol="classic-eager", assignor="cooperative-sticky"),
        "workload.assignor",
        "does not go with protocol 'classic-eager'",
    ),
    (
        lambda d: d["workload"].update(heartbeat_interval_ms=7000),
        "workload.heartbeat_interval_ms",
        "below session_timeout_ms",
    ),
    (lambda d: d["cluster"].update(kafka="2.8"), "cluster.kafka", "older than the supported range"),
    (
        lambda d: d["workload"].update(warmup="stable"),
        "workload.warmup",
        "must be one of 'group-formed', 'none'; got 'stable'",
    ),
    (lambda d: d["workload"].update(warmup_timeout_s=0), "workload.warmup_timeout_s", "must be more than 0, got 0"),
    (
        lambda d: d["workload"].update(librdkafka={"processing": "async"}),
        "workload.librdkafka.processing",
        "must be one of 'inline', 'worker'; got 'async'",
    ),
    (
        lambda d: d["workload"].update(protocol="zk-eager", librdkafka={"processing": "worker"}),
        "workload.librdkafka",
        "settings for classic-eager, classic-static, classic-cooperative, consumer, consumer-static (librdkafka's group client); "
        "this workload's members (protocol: zk-eager, driver: librdkafka) take workload.zk_eager",
    ),
    # One bound for every way a group grows (faults.base.MAX_MEMBERS): 1,000 members at most.
    (lambda d: d["workload"].update(consumers=1001), "workload.consumers", "must be at most 1000, got 1001"),
    (
        lambda d: d["faults"].append({"kind": "scale", "consumers": 1001, "at_s": 1}),
        "faults[2].consumers",
        "must be at most 1000, got 1001",
    ),
    (
        lambda d: d["faults"].append({"kind": "join-storm", "consumers": 1001, "at_s": 1}),
        "faults[2].consumers",
        "must be at most 1000, got 1001",
    ),
    # Past 128 member processes, members share hosts; past 128 lanes, members share lanes.
    (
        lambda d: d["workload"].update(consumers=129, lanes="on-demand"),
        "workload.members_per_host",
        "129 members each in a process of its own; at most 128 (~30 MB each): host them (members_per_host: 2 or more)",
    ),
    (
        lambda d: d["workload"].update(consumers=129, members_per_host=50),
        "workload.lanes",
        "129 members with a lane of their own; at most 128 (each is a listener on every broker): "
        "lanes: on-demand shares them",
    ),
    (
        lambda d: d["workload"].update(members_per_host=2, protocol="zk-eager"),
        "workload.members_per_host",
        "the librdkafka driver runs one member per process (only a driver whose members can share a process may be hosted)",
    ),
]


@pytest.mark.parametrize("change, key, reason", BAD_VALUES, ids=[key for _, key, _ in BAD_VALUES])
def test_bad_value_names_file_key_and_reason(tmp_path, change, key, reason):
    err, path = problems_of(tmp_path, change)
    assert err.exit_code == EXIT_BAD_INPUT
    assert len(err.problems) == 1, err.problems
    assert err.problems[0][0].split(" (line ")[0] == key  # one-based, with its line in the file
    assert reason in err.problems[0][1]
    assert str(err).startswith(f"{path}: {key} (line ")


def test_zookeeper_target_is_fine_in_zookeeper_mode_and_controller_in_kraft(tmp_path):
    data = copy.deepcopy(MINIMAL)
    data["faults"][0]["target"] = "zookeeper-1"
    assert load_scenario(write(tmp_path, data)).faults[0].target == "zookeeper-1"
    data["cluster"]["kafka"] = "4.1"
    data["faults"][0]["target"] = "controller-1"
    assert load_scenario(write(tmp_path, data)).faults[0].target == "controller-1"


def test_all_problems_of_a_file_are_reported_together(tmp_path):
    def many_field_problems(d):
        d["workload"]["consumerz"] = 1
        d["topics"][0]["partitions"] = 0
        d["faults"][0]["kind"] = "partition"

    err, path = problems_of(tmp_path, many_field_problems)
    assert {key.split(" (line ")[0] for key, _ in err.problems} == {
        "workload.consumerz",
        "topics[1].partitions",
        "faults[1].kind",
    }
    assert len(str(err).splitlines()) == 3

    def many_reference_problems(d):
        d["faults"][0].update(target="consumer-9", at_s=99)
        d["checks"] = {"nope": {}, "convergence": {"within": 1}}

    err, path = problems_of(tmp_path, many_reference_problems)
    assert [key.split(" (line ")[0] for key, _ in err.problems] == [
        "faults[1].target",
        "faults[1].at_s",
        "checks.nope",
        "checks.convergence",
    ]
    assert all(line.startswith(f"{path}: ") for line in str(err).splitlines())


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, text="name: t\nduration_s: 30\ntopics: [\n  - {name: events\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    ((key, reason),) = info.value.problems
    assert key.startswith("line ") and "not valid YAML" in reason
    assert str(info.value).startswith(f"{path}: line ")


@pytest.mark.parametrize("text", ["- name: t\n- duration_s: 3\n", "just a string\n", ""])
def test_top_level_must_be_a_mapping(tmp_path, text):
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text=text))
    assert info.value.problems == [("(top level)", "a scenario is a mapping of keys such as name, duration_s, topics")]


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: (file): No such file or directory"


@pytest.mark.parametrize(
    "session_ms, implied", [(3000, {"group.min.session.timeout.ms": 3000}), (6000, {}), (10000, {})]
)
def test_broker_config_lowers_min_session_timeout_only_when_needed(tmp_path, session_ms, implied):
    data = copy.deepcopy(MINIMAL)
    data["workload"].update(session_timeout_ms=session_ms, heartbeat_interval_ms=500)
    data["cluster"]["broker_config"] = {"num.network.threads": 2}
    assert load_scenario(write(tmp_path, data)).broker_config() == {**implied, "num.network.threads": 2}


def test_explicit_broker_config_wins_over_implied(tmp_path):
    data = copy.deepcopy(MINIMAL)
    data["workload"].update(session_timeout_ms=3000, heartbeat_interval_ms=500)
    data["cluster"]["broker_config"] = {"group.min.session.timeout.ms": 1000}
    assert load_scenario(write(tmp_path, data)).broker_config() == {"group.min.session.timeout.ms": 1000}


def test_member_slots_never_reuse_a_stopped_members_number(tmp_path):
    """3 members, scale down to 1, then a join storm of 2: the newcomers are consumer-4 and
    consumer-5 (WorkloadProcesses numbers past every member ever started), so 5 lanes."""
    data = copy.deepcopy(MINIMAL)
    data["faults"] = [
        {"kind": "scale", "consumers": 1, "at_s": 1},
        {"kind": "join-storm", "consumers": 2, "at_s": 2},
        {"kind": "scale", "consumers": 4, "at_s": 3},
    ]
    s = load_scenario(write(tmp_path, data))
    assert s.member_slots() == [f"consumer-{i}" for i in range(1, 7)]  # 4, 5 by the storm; 6 by the last scale-up


def test_a_topic_name_too_long_for_a_runs_prefix_is_refused_up_front(tmp_path):
    """On a shared or external cluster a run's topics are rl-<run dir>-<name>: the longest name
    that still fits Kafka's 249 characters is what validation allows, before any run starts."""
    data = copy.deepcopy(MINIMAL)
    data.update(name="n" * 80, seed=0, topics=[{"name": "t" * 143, "partitions": 1}])
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, data))
    assert "topics[1].name (line 7): 143 characters" in str(info.value) and "only up to 142" in str(info.value)
    data["topics"][0]["name"] = "t" * 142
    scenario = load_scenario(write(tmp_path, data))
    # the longest run directory name: a UTC stamp, the name and seed, a "-99" for the 99th in one second
    shared = scenario.isolated(scenario.isolation_prefix(f"20261127T061259Z-{scenario.run_name}-99"))
    assert len(shared.topics[0].name) == 249


@pytest.mark.parametrize(
    "faults",
    [
        # consumer-1 crashed for good: the scale to 2 keeps the live consumer-2 and consumer-3
        [
            {"kind": "crash", "target": "consumer-1", "at_s": 5},
            {"kind": "scale", "consumers": 2, "at_s": 10},
            {"kind": "pause", "target": "consumer-3", "at_s": 15, "duration_s": 2},
        ],
        # a scale while a crashed member waits for its restart: who runs after it is not judged
        [
            {"kind": "crash", "target": "consumer-1", "at_s": 5, "restart_after_s": 10},
            {"kind": "scale", "consumers": 2, "at_s": 8},
            {"kind": "pause", "target": "consumer-3", "at_s": 20, "duration_s": 2},
        ],
        # a network fault acts on the member's proxies, there whether or not the process is
        [
            {"kind": "crash", "target": "consumer-2", "at_s": 5, "restart_after_s": 10},
            {"kind": "network", "target": "consumer-2", "at_s": 8, "duration_s": 4},
        ],
    ],
)
def test_faults_that_find_their_target(tmp_path, faults):
    load_scenario(write(tmp_path, {**MINIMAL, "faults": faults}))
