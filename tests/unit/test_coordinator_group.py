"""The project's coordinator: one group's state machine, driven by hand with a fake clock."""

from __future__ import annotations

import pytest

from coordinator.group import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    Group,
    NotLeader,
    variant,
)
from coordinator.protocol import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)

SESSION_MS, REBALANCE_MS = 6000, 30000
RANGE = [{"name": "range", "topics": ["events"]}]


class Harness:
    def __init__(self, name: str, initial_delay_ms: int = 3000):
        self.events: list[tuple[str, dict]] = []
        self.saved: list[dict] = []
        self.fenced = False
        self.group = Group(
            "g",
            variant(name, initial_delay_ms),
            emit=lambda n, **f: self.events.append((n, f)),
            persist=self._persist,
            partitions_of=lambda topics: {"events": 4},
        )

    def _persist(self, snapshot: dict) -> None:
        if self.fenced:
            raise NotLeader("fenced")
        self.saved.append(snapshot)

    def join(self, client: str, now: float, member_id: str = ""):
        return self.group.join(member_id, client, SESSION_MS, REBALANCE_MS, RANGE, now)

    def named(self, name: str) -> list[dict]:
        return [f for n, f in self.events if n == name]


def answer(reply) -> dict:
    response = reply.wait(0)
    assert response is not None, "still waiting"
    return response


def stable_pair(h: Harness, now: float = 0) -> tuple[dict, dict]:
    """Two members in one generation, assignment synced (v2/v3) or handed out (v1)."""
    a = h.join("a", now)
    b = h.join("b", now)
    h.group.tick(now + 3000)  # v3's initial delay
    ra = answer(a)
    if b.wait(0) is None:  # v1/v2: a's generation 1 came first, b's join began the next: a rejoins
        ra = answer(h.join("a", now + 1, ra["member_id"]))
    rb = answer(b)
    assert ra["generation_id"] == rb["generation_id"]
    if not h.group.variant.coordinator_assigns:
        leader, follower = (ra, rb) if ra["leader_id"] == ra["member_id"] else (rb, ra)
        half = {
            leader["member_id"]: [{"topic": "events", "partition": p} for p in (0, 1)],
            follower["member_id"]: [{"topic": "events", "partition": p} for p in (2, 3)],
        }
        f = h.group.sync(follower["member_id"], follower["generation_id"], None, now + 2)
        assert f.wait(0) is None  # the follower waits for the leader's assignment
        assert answer(h.group.sync(leader["member_id"], leader["generation_id"], half, now + 2))["error_code"] == NONE
        assert answer(f)["assignment"] == half[follower["member_id"]]
    assert h.group.state == STABLE
    return ra, rb


@pytest.mark.parametrize("name", ["v1", "v2", "v3"])
def test_a_generation_forms_and_a_stale_commit_is_refused(name):
    h = Harness(name)
    ra, rb = stable_pair(h)
    generation = ra["generation_id"]
    assert h.group.commit(ra["member_id"], generation, [], 10)["error_code"] == NONE
    refused = h.group.commit(ra["member_id"], generation - 1, [], 10)
    assert refused["error_code"] == ILLEGAL_GENERATION
    assert h.group.heartbeat(rb["member_id"], generation, 10)["error_code"] == NONE
    assert h.saved[-1]["state"] == STABLE and h.saved[-1]["generation"] == generation


def test_v1_assigns_in_the_join_response():
    h = Harness("v1")
    ra, rb = stable_pair(h)
    assert [tp["partition"] for tp in ra["assignment"] + rb["assignment"]] == [0, 1, 2, 3]
    assert not ra["members"] and not rb["members"]  # nobody else gets to assign


@pytest.mark.parametrize(
    "name, signal", [("v1", ILLEGAL_GENERATION), ("v2", REBALANCE_IN_PROGRESS), ("v3", REBALANCE_IN_PROGRESS)]
)
def test_each_variant_signals_a_rebalance_its_own_way(name, signal):
    h = Harness(name)
    ra, rb = stable_pair(h)
    h.join("c", 100)
    assert h.group.state == PREPARING
    assert h.group.heartbeat(ra["member_id"], ra["generation_id"], 100)["error_code"] == signal


def test_a_rebalance_completes_as_soon_as_every_known_member_rejoined():
    h = Harness("v2")
    ra, rb = stable_pair(h)
    c = h.join("c", 100)
    a = h.join("a", 200, ra["member_id"])
    assert c.wait(0) is None and a.wait(0) is None  # b has not rejoined yet
    b = h.join("b", 300, rb["member_id"])
    assert {answer(r)["generation_id"] for r in (a, b, c)} == {ra["generation_id"] + 1}
    assert h.group.state == COMPLETING


def test_a_member_that_does_not_rejoin_is_removed_at_the_rebalance_timeout():
    """v1/v2: the session timeout doubles as the rebalance timeout; v3 waits the member's own."""
    for name, timeout in (("v2", SESSION_MS), ("v3", REBALANCE_MS)):
        h = Harness(name)
        ra, rb = stable_pair(h)
        a = h.join("a", 1000, ra["member_id"])
        for now in range(1000, 1000 + timeout, 500):  # b keeps heartbeating but never rejoins
            h.group.heartbeat(rb["member_id"], rb["generation_id"], now)
            h.group.tick(now)
        assert a.wait(0) is None, name
        h.group.tick(1000 + timeout)
        assert answer(a)["members"] == [{"member_id": ra["member_id"], "topics": ["events"]}], name
        [removed] = h.named("coordinator_member_removed")
        assert removed["member_id"] == rb["member_id"] and "rebalance timeout" in removed["cause"]


def test_a_silent_member_is_removed_after_its_session_timeout():
    h = Harness("v2")
    ra, rb = stable_pair(h)
    h.group.heartbeat(ra["member_id"], ra["generation_id"], 5000)
    h.group.tick(5999)
    assert h.group.state == STABLE
    h.group.tick(6010)  # b's last sign of life was its sync at 2 ms
    assert h.group.state == PREPARING
    assert h.group.heartbeat(rb["member_id"], rb["generation_id"], 6100)["error_code"] == UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("name, delay_ms, generations", [("v3", 3000, 1), ("v3", 0, 4), ("v2", 3000, 4)])
def test_a_join_storm_into_an_empty_group(name, delay_ms, generations):
    """KIP-134: with the initial delay the storm becomes one generation, without it several."""
    h = Harness(name, delay_ms)
    members: dict[str, str] = {}
    pending = {}
    for i, client in enumerate("abcd"):
        pending[client] = h.join(client, i * 100)
        for other, reply in list(pending.items()):  # whoever got an answer rejoins, as a member would
            response = reply.wait(0)
            if response is not None and response["error_code"] == NONE and other != client:
                members[other] = response["member_id"]
                pending[other] = h.join(other, i * 100 + 1, members[other])
    h.group.tick(3500)  # past the last newcomer's delay (300 + 3000), before any session ends
    assert len(h.named("coordinator_preparing_rebalance")) == generations
    assert h.group.generation == generations


def test_a_deposed_leader_answers_the_waiting_members_not_coordinator():
    h = Harness("v2")
    h.fenced = True
    reply = h.join("a", 0)
    assert answer(reply)["error_code"] == NOT_COORDINATOR


def test_the_last_member_leaving_empties_the_group():
    h = Harness("v2")
    ra, rb = stable_pair(h)
    h.group.leave(rb["member_id"], 100)
    a = h.join("a", 200, ra["member_id"])
    assert answer(a)["generation_id"] == ra["generation_id"] + 1
    h.group.leave(ra["member_id"], 300)
    assert h.group.state == EMPTY and h.named("coordinator_group_empty")


def test_a_new_leader_restores_the_group_with_fresh_sessions():
    h = Harness("v2")
    ra, rb = stable_pair(h)
    snapshot = h.saved[-1]
    later = 60_000  # long after both members' last heartbeat on the old leader
    restored = Group.restore(
        snapshot,
        {("events", 0): 42},
        later,
        variant=h.group.variant,
        emit=lambda *a, **k: None,
        persist=lambda s: None,
        partitions_of=lambda t: {"events": 4},
    )
    assert restored.state == STABLE and restored.generation == ra["generation_id"]
    assert restored.offsets == {("events", 0): 42}
    restored.tick(later + SESSION_MS - 1)
    assert set(restored.members) == {ra["member_id"], rb["member_id"]}


def test_a_resigning_leader_unloads_the_group_dead_and_its_waiting_members_move_on():
    h = Harness("v2")
    ra, rb = stable_pair(h)
    waiting = h.join("c", 100)
    h.group.unload("coordinator-1 is no longer the coordinator", 200)
    assert answer(waiting)["error_code"] == NOT_COORDINATOR
    assert h.group.state == DEAD and h.named("coordinator_state_changed")[-1]["to"] == DEAD
    assert answer(h.join("d", 300))["error_code"] == COORDINATOR_NOT_AVAILABLE  # find the coordinator again
