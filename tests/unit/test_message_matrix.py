"""benchmarks/message_matrix.py: which (protocol, API, action) it runs, the scenario each gets, and
how a row reads a history (what the member did next)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from faults.message import ACTIONS
from faults.message_proxy.apis import APIS
from harness.scenario import load_scenario_data
from oracle.protocols import GENERATIONS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def matrix():
    spec = importlib.util.spec_from_file_location("message_matrix", REPO / "benchmarks" / "message_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_api_each_protocol_sends_with_every_action(matrix):
    combos = matrix.combinations(["classic-cooperative", "consumer"], [], [])
    for protocol in ("classic-cooperative", "consumer"):
        apis = {a for p, a, _ in combos if p == protocol}
        assert apis == set(GENERATIONS[protocol].kafka_apis)
    assert (
        len(combos)
        == len(set(combos))
        == sum(len(GENERATIONS[p].kafka_apis) * len(ACTIONS) for p in ("classic-cooperative", "consumer"))
    )
    assert matrix.combinations(["consumer"], ["SyncGroup"], []) == []  # the consumer protocol sends none
    assert matrix.combinations(["consumer"], ["OffsetFetch"], ["error"]) == [("consumer", "OffsetFetch", "error")]


def test_each_error_is_one_its_api_is_answered_with(matrix):
    assert set(matrix.ERRORS) == set(APIS)
    for api, error in matrix.ERRORS.items():
        assert error in APIS[api].errors, (api, error)


@pytest.mark.parametrize(
    "protocol, api, action",
    [("classic-cooperative", "SyncGroup", "error"), ("consumer", "ConsumerGroupHeartbeat", "delay")],
)
def test_each_scenario_is_valid_and_restarts_the_faulted_member_inside_the_window(
    matrix, tmp_path, protocol, api, action
):
    data = matrix.scenario(protocol, api, action)
    scenario = load_scenario_data(data, tmp_path / "s.yaml")
    assert scenario.workload.protocol == protocol
    fault, restart = data["faults"]
    assert (fault["target"], fault["api"], fault["action"]) == ("consumer-1", api, action)
    assert restart["targets"] == ["consumer-1"]
    assert fault["at_s"] < restart["at_s"] < fault["at_s"] + fault["duration_s"] < data["duration_s"]


def test_what_next_reads_the_members_telling_events_after_the_first_message(matrix):
    acted = [{"name": "message_faulted", "mono_ms": 1000.0}]
    events = [
        {"name": "group_join_sent", "source": "consumer-1", "mono_ms": 900.0},  # before: not next
        {"name": "records_consumed", "source": "consumer-1", "mono_ms": 1001.0},  # says nothing
        {"name": "group_sync_failed", "source": "consumer-1", "mono_ms": 1002.0, "error": "Broker: Group rebalance"},
        {"name": "group_join_sent", "source": "consumer-2", "mono_ms": 1003.0},  # another member
        {"name": "offsets_committed", "source": "consumer-1", "mono_ms": 1004.0, "success": True},
        {"name": "offsets_committed", "source": "consumer-1", "mono_ms": 1005.0, "success": False, "error": "X"},
        {"name": "group_join_sent", "source": "consumer-1", "mono_ms": 1006.0},
        {"name": "group_join_sent", "source": "consumer-1", "mono_ms": 1007.0},  # the same again: once
        {"name": "group_joined", "source": "consumer-1", "mono_ms": 1008.0},
        {"name": "group_synced", "source": "consumer-1", "mono_ms": 1009.0},  # beyond the four shown
    ]
    assert matrix.what_next(events, acted) == (
        "group_sync_failed (Broker: Group rebalance) > commit failed X > group_join_sent > group_joined"
    )
    assert matrix.what_next(events, []) == "-"
    late = [{**e, "mono_ms": e["mono_ms"] + matrix.NEXT_WITHIN_MS} for e in events[2:]]
    assert matrix.what_next(late, acted) == "nothing telling"
