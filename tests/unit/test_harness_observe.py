"""The harness's reading of the observer's status: when has the group formed, is it stable."""

from __future__ import annotations

import json

import pytest

from runtime.history import now
from workloads.observer import STATUS_MAX_AGE_MS, ObserverStatus


@pytest.fixture
def status(tmp_path):
    path = tmp_path / "observer.status.json"

    def write(state="STABLE", members=(), covers_all=True, age_ms=0.0) -> ObserverStatus:
        group = {"state": state, "coordinator": 1, "covers_all": covers_all, "members": {key: [] for key in members}}
        path.write_text(json.dumps({"group": group, "mono_ms": now()[1] - age_ms}))
        return ObserverStatus(path)

    return write


KAFKA_MEMBERS = ("consumer-1/consumer-1-0b7e", "consumer-2/consumer-2-91aa")
ZK_MEMBERS = ("consumer-1/consumer-1-5d2c90e1", "consumer-2/consumer-2-77ab01f3")  # "<member>/<consumer id>"


@pytest.mark.parametrize("members", [KAFKA_MEMBERS, ZK_MEMBERS])
def test_formed_once_every_initial_member_is_in_a_stable_group(status, members):
    assert status(members=members).formed(["consumer-1", "consumer-2"])
    assert status(members=members).is_stable()


def test_not_formed_while_a_member_is_missing(status):
    # consumer-1 alone covers every partition: stable, but consumer-2 (a slow JVM) has not joined.
    s = status(members=KAFKA_MEMBERS[:1])
    assert s.is_stable() and not s.formed(["consumer-1", "consumer-2"])


def test_exactly_formed_waits_for_a_member_that_went_without_leaving(status):
    # consumer-2 (static) was stopped: the broker keeps it, and its partitions, until its session expires
    s = status(members=KAFKA_MEMBERS)
    assert s.formed(["consumer-1"]) and not s.formed(["consumer-1"], exactly=True)
    assert status(members=KAFKA_MEMBERS[:1]).formed(["consumer-1"], exactly=True)


def test_a_member_name_is_not_a_prefix_match(status):
    assert not status(members=("consumer-10/consumer-10-aa",)).formed(["consumer-1"])


@pytest.mark.parametrize(
    "kwargs", [{"state": "PREPARING_REBALANCE"}, {"covers_all": False}, {"age_ms": STATUS_MAX_AGE_MS + 1000}]
)
def test_not_formed_while_rebalancing_uncovered_or_stale(status, kwargs):
    assert not status(members=KAFKA_MEMBERS, **kwargs).formed(["consumer-1", "consumer-2"])


def test_no_status_yet_is_not_formed(tmp_path):
    assert not ObserverStatus(tmp_path / "missing.json").formed(["consumer-1"])
