"""harness/components/versions.py: the release catalogue — what each supported Kafka release can do,
lines resolved to their newest tested release, and the releases outside the range refused with a reason."""

from __future__ import annotations

import pytest

from harness.components import versions


@pytest.mark.parametrize(
    "text, version, zookeeper, consumer_protocol, log4j",
    [
        ("3.3.2", "3.3.2", True, None, "log4j1"),
        ("3.7", "3.7.2", True, "early-access", "log4j1"),
        ("3.8.1", "3.8.1", True, "early-access", "log4j1"),
        ("3.9", "3.9.2", True, None, "log4j1"),
        ("4.0", "4.0.2", False, "ga", "log4j2"),
        ("4.3", "4.3.1", False, "ga", "log4j2"),
        ("4.4", "4.4.0", False, "ga", "log4j2"),
    ],
)
def test_a_release_or_line_has_its_facts(text, version, zookeeper, consumer_protocol, log4j):
    release = versions.kafka_release(text)
    assert (release.version, release.zookeeper, release.kraft) == (version, zookeeper, True)
    assert (release.consumer_protocol, release.log4j, release.tested) == (consumer_protocol, log4j, True)
    assert release.default_metadata == ("zookeeper" if zookeeper else "kraft")


def test_an_untested_release_of_a_supported_line_is_accepted_and_says_so():
    release = versions.kafka_release("3.6.1")
    assert release.version == "3.6.1" and release.line == "3.6" and not release.tested
    assert release.zookeeper and release.consumer_protocol is None


@pytest.mark.parametrize(
    "text, reason",
    [
        ("2.8.0", "older than the supported range"),
        ("3.2.3", "older than the supported range"),
        ("5.0.0", "newer than the supported range"),
        ("4.5", "newer than the supported range"),
        ("3.6", "no tested release"),
        ("latest", "not a Kafka release"),
        ("3.9.2-rc1", "not a Kafka release"),
    ],
)
def test_a_release_outside_the_range_is_refused_with_the_reason(text, reason):
    with pytest.raises(ValueError, match=reason):
        versions.kafka_release(text)


def test_the_consumer_protocol_early_access_is_kraft_only_with_its_broker_settings():
    early = versions.kafka_release("3.7.2")
    assert early.consumer_protocol_problem("kraft") is None
    assert "metadata: kraft" in early.consumer_protocol_problem("zookeeper")
    assert early.consumer_protocol_config()["group.coordinator.rebalance.protocols"] == "classic,consumer"
    assert versions.kafka_release("4.4.0").consumer_protocol_config() == {}  # GA: nothing to enable
    # 3.7's ConsumerGroupDescribe is unstable: advertised only when asked, and described with 3.7's schema.
    assert early.consumer_protocol_config()["unstable.api.versions.enable"] == "true"
    assert early.consumer_group_describe_unstable
    assert "unstable.api.versions.enable" not in versions.kafka_release("3.8.1").consumer_protocol_config()
    assert not any(versions.kafka_release(v).consumer_group_describe_unstable for v in ("3.8.1", "4.0", "4.4"))
    assert "no `consumer` group protocol" in versions.kafka_release("3.9").consumer_protocol_problem("kraft")


def test_generation_needs_are_met_by_the_default_releases():
    assert versions.release_meeting("zookeeper") == "3.9.2"
    assert versions.release_meeting("consumer-protocol") == "4.4.0"
    assert "no ZooKeeper mode" in versions.kafka_release("4.0").need_problem("zookeeper", "kraft")
    assert versions.kafka_release("3.3").need_problem("zookeeper", "kraft") == "it needs `metadata: zookeeper`"
