"""The ``message`` fault kind (faults/message.py): what it is validated against, the rule it gives
the message proxy, how it is drawn, and what a run with one asks of its cluster. The proxy itself:
test_message_proxy*.py; on real brokers: tests/integration/test_message_faults.py."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from faults import catalogue
from faults.capabilities import Capability
from faults.message_proxy import apis
from harness.run.loop import cluster_spec
from harness.scenario import Scenario
from oracle import History, check_history
from oracle.explain import explain_rebalances
from oracle.protocols import GENERATIONS
from tests.fake_targets import FakeTargets
from tests.unit.test_backend_capabilities import problems

SMOKE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml").read_text())


def scenario(*faults: dict, protocol: str = "classic-cooperative", kafka: str = "3.9.1", **extra) -> dict:
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {**data.get("cluster", {}), "kafka": kafka}
    data["workload"]["protocol"] = protocol
    data["workload"].pop("assignor", None)  # the generation's own
    data["faults"] = [{"kind": "message", "at_s": 5, "duration_s": 10, **f} for f in faults]
    return {**data, **extra}


def test_each_generation_sends_the_apis_it_declares_and_each_is_one_the_proxy_knows():
    assert set(GENERATIONS["classic-cooperative"].kafka_apis) == {
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "FindCoordinator",
        "Fetch",
    }
    assert "ConsumerGroupHeartbeat" in GENERATIONS["consumer"].kafka_apis
    assert "JoinGroup" not in GENERATIONS["consumer"].kafka_apis
    assert GENERATIONS["zk-eager"].kafka_apis == ("Fetch",)  # its group lives in ZooKeeper
    assert all(set(g.kafka_apis) <= set(apis.APIS) for g in GENERATIONS.values())


def test_an_api_the_members_protocol_does_not_send_is_refused_with_the_reason():
    said = problems(scenario({"target": "consumer-1", "api": "ConsumerGroupHeartbeat", "action": "delay"}))
    assert said == [
        "faults[1].api: the classic cooperative protocol (KIP-429) (classic-cooperative) sends no "
        "ConsumerGroupHeartbeat (its members send: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, "
        "OffsetFetch, FindCoordinator, Fetch)"
    ]
    said = problems(
        scenario({"target": "consumer-1", "api": "SyncGroup", "action": "delay"}, protocol="consumer", kafka="4.1")
    )
    assert len(said) == 1 and said[0].startswith(
        "faults[1].api: the consumer protocol (KIP-848) (consumer) sends no SyncGroup"
    )


def test_an_error_the_api_is_never_answered_with_is_refused():
    said = problems(
        scenario({"target": "consumer-1", "api": "Heartbeat", "action": "error", "error": "OFFSET_OUT_OF_RANGE"})
    )
    assert len(said) == 1 and said[0].startswith("faults[1].error: Heartbeat is never answered OFFSET_OUT_OF_RANGE")


@pytest.mark.parametrize(
    "entry",
    [
        {"action": "error"},  # which error?
        {"action": "delay", "error": "REBALANCE_IN_PROGRESS"},  # an error only an error action puts in
    ],
)
def test_an_error_goes_with_the_error_action_only(entry):
    said = problems(scenario({"target": "consumer-1", "api": "SyncGroup", **entry}))
    assert len(said) == 1 and "error: the error code an `error` action puts in, and only there" in said[0]


def test_match_names_fields_of_the_apis_requests():
    ok = scenario(
        {"target": "consumer-1", "api": "ConsumerGroupHeartbeat", "action": "withhold", "match": {"member_epoch": 0}},
        protocol="consumer",
        kafka="4.1",
    )
    assert problems(ok) == []
    bad = copy.deepcopy(ok)
    bad["faults"][0]["match"] = {"epoch_of_member": 0}
    said = problems(bad)
    assert len(said) == 1 and said[0].startswith(
        "faults[1].match: ConsumerGroupHeartbeat requests have no field epoch_of_member"
    )


def test_a_message_fault_acts_on_members_only_one_or_all():
    assert problems(scenario({"target": "consumers", "api": "Heartbeat", "action": "delay"})) == []
    said = problems(scenario({"target": "broker-1", "api": "Heartbeat", "action": "delay"}))
    assert said == ["faults[1].target: message faults act on a member's messages (or 'consumers'), not 'broker-1'"]


def test_the_rule_it_gives_the_proxy_and_takes_back_when_it_heals():
    fault = catalogue.from_spec(
        {
            "fault_id": "f2",
            "kind": "message",
            "at_s": 5,
            "target": "consumer-2",
            "duration_s": 10,
            "api": "JoinGroup",
            "action": "withhold",
            "count": 1,
        }
    )
    targets = FakeTargets()
    details = fault.inject(targets)
    fault.heal(targets)
    rule = details["rule"]
    assert targets.actions() == [("add_rule", "consumer-2", rule), ("remove_rule", "f2")]
    assert rule["member"] == "consumer-2" and rule["api"] == "JoinGroup" and rule["action"] == "withhold"
    assert rule["close_after_ms"] == 303_000  # the member's own timeout for a JoinGroup
    assert rule["count"] == 1 and rule["probability"] == 1.0 and rule["match"] == {}
    assert rule["seed"] == catalogue.from_spec({**fault.spec.model_dump(), "fault_id": "f2"}).spec.rule("f2", 0)["seed"]
    every = catalogue.from_spec({"fault_id": "f3", **fault.spec.model_dump(), "target": "consumers"})
    assert every.inject(FakeTargets())["rule"]["member"] == "*"


def test_a_run_with_a_message_fault_passes_every_lane_through_the_proxy_and_others_do_not():
    with_one = Scenario.model_validate(scenario({"target": "consumer-1", "api": "Heartbeat", "action": "delay"}))
    assert with_one.needs(Capability.MESSAGE_LANES)
    spec = cluster_spec(with_one, Path("/tmp/history.jsonl"))
    assert spec.message_proxy.lanes == frozenset({1, 2, 3}) and spec.message_proxy.history == "/tmp/history.jsonl"
    drawn = scenario()
    drawn["random_faults"] = {"count": 3, "start_s": 5, "duration_s": [1, 3], "kinds": ["pause", "message"]}
    assert cluster_spec(Scenario.model_validate(drawn)).message_proxy is not None
    without = copy.deepcopy(SMOKE)
    assert cluster_spec(Scenario.model_validate(without)).message_proxy is None  # no cost where none is asked for


@pytest.mark.parametrize("protocol, kafka", [("classic-cooperative", "3.9.1"), ("consumer", "4.1")])
def test_drawn_message_faults_are_the_members_own_apis_and_always_valid(protocol, kafka):
    data = scenario(protocol=protocol, kafka=kafka)
    data["faults"] = []
    data["random_faults"] = {"count": 12, "start_s": 5, "duration_s": [1, 3], "kinds": ["message"]}
    s = Scenario.model_validate(data)
    drawn = [f for f in s.schedule() if f["kind"] == "message"]
    assert drawn and drawn == [f for f in Scenario.model_validate(data).schedule() if f["kind"] == "message"]
    spoken = GENERATIONS[protocol].kafka_apis
    assert all(f["api"] in spoken and f["api"] not in ("Fetch", "LeaveGroup") for f in drawn)
    assert all(f["target"].startswith("consumer-") for f in drawn)
    assert all(
        (f["error"] in apis.APIS[f["api"]].errors) == (f["action"] == "error")
        for f in drawn
        if f["error"] or f["action"] == "error"
    )


def implausible(g) -> set[str]:
    """What a broker never answers a member of generation ``g`` with on its own (Kafka's semantics, said
    here apart from apis.ERRORS so that a wrong flag there fails)."""
    never = {"INCONSISTENT_GROUP_PROTOCOL", "GROUP_MAX_SIZE_REACHED", "UNSTABLE_OFFSET_COMMIT"}
    static = set() if g.static_membership else {"FENCED_INSTANCE_ID", "UNRELEASED_INSTANCE_ID"}
    by_epochs = (
        {"ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"}
        if g.member_epochs
        else {"STALE_MEMBER_EPOCH", "FENCED_MEMBER_EPOCH"}
    )
    return never | static | by_epochs


@pytest.mark.parametrize("name", sorted(GENERATIONS))
def test_no_generation_is_drawn_an_error_a_broker_would_not_answer_its_members(name):
    import random

    from faults.base import Drawing
    from faults.message import MessageSpec, drawn_apis

    g = GENERATIONS[name]
    drawing = Drawing(
        members=("consumer-1",),
        zookeeper=False,
        kafka_apis=g.kafka_apis,
        static_membership=g.static_membership,
        member_epochs=g.member_epochs,
    )
    rng = random.Random(7)
    drawn = [MessageSpec.draw(rng, "consumer-1", 1.0, drawing) for _ in range(3000)] if drawn_apis(drawing) else []
    drawn += MessageSpec.draw_shapes("consumer-1", drawing)
    errors = {(d["api"], d["error"]) for d in drawn if d.get("error")}
    assert {e for _, e in errors} & implausible(g) == set()
    # Every other error its APIs are answered with is drawn: the restriction is no wider than Kafka's.
    possible = {(a, e) for a in drawn_apis(drawing) for e in apis.APIS[a].errors if e not in implausible(g)}
    assert errors == possible


def test_every_error_flagged_is_one_some_api_is_answered_with():
    assert set(apis.ERRORS) <= {e for a in apis.APIS.values() for e in a.errors}


def test_a_dynamic_members_scenario_draws_no_static_members_error():
    """Through the scenario: its generation's capabilities reach the draw."""
    data = scenario(protocol="classic-cooperative")
    data["faults"] = []
    data["random_faults"] = {"count": 60, "start_s": 5, "duration_s": [0.1, 0.2], "kinds": ["message"]}
    data["duration_s"] = 600
    errors = {f["error"] for f in Scenario.model_validate(data).schedule() if f.get("error")}
    assert errors and errors.isdisjoint(implausible(GENERATIONS["classic-cooperative"]))


def test_existing_seeded_schedules_do_not_change():
    """message is drawn only where random_faults.kinds lists it: the default kinds draw what they drew."""
    data = copy.deepcopy(SMOKE)
    data["random_faults"] = {"count": 6, "start_s": 5, "duration_s": [1, 3]}
    kinds = [f["kind"] for f in Scenario.model_validate(data).schedule()]
    assert "message" not in kinds


def test_a_message_proxy_that_dies_mid_run_breaks_the_run(tmp_path):
    """Every message fault's effect went with it: the run is broken (exit 3), never a member's fault."""
    from types import SimpleNamespace

    from harness.run.loop import Run
    from harness.scenario import load_scenario
    from runtime.errors import EXIT_RUN_ERROR, ClusterError

    path = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml"
    run = Run(load_scenario(path), path, tmp_path, lambda m: None)
    dead = SimpleNamespace(
        name="message-proxy", role="message-proxy", popen=SimpleNamespace(returncode=-9), log_path=tmp_path / "log"
    )
    run.supervisor = SimpleNamespace(poll_exits=lambda: [dead])
    with pytest.raises(ClusterError, match="the message proxy exited with code -9 while the run went on") as e:
        run._wait("workload", 5.0, lambda: False)
    assert e.value.exit_code == EXIT_RUN_ERROR


def test_the_clients_own_timeout_per_api_is_its_drivers():
    """librdkafka's per-request timeouts (src/rdkafka_request.c); the Java consumer's request.timeout.ms."""
    from workloads.driver import driver_of

    librdkafka, java = driver_of("workloads.consumer"), driver_of("workloads.verifiable")
    timing = {"session_timeout_ms": 10_000, "max_poll_interval_ms": 300_000, "heartbeat_interval_ms": 3_000}
    assert {api: librdkafka.answer_timeout_ms(api, **timing) for api in apis.APIS} == {
        "JoinGroup": 303_000,
        "SyncGroup": 13_000,
        "Heartbeat": 10_000,
        "LeaveGroup": 5_000,
        "ConsumerGroupHeartbeat": 3_000,
        "OffsetCommit": 60_000,
        "OffsetFetch": 60_000,
        "FindCoordinator": 60_000,
        "Fetch": 60_000,
    }
    assert (
        java.answer_timeout_ms("JoinGroup", **timing) == 305_000
        and java.answer_timeout_ms("SyncGroup", **timing) == 30_000
    )


@pytest.mark.parametrize(
    "api, action",
    [
        ("Heartbeat", "withhold"),
        ("ConsumerGroupHeartbeat", "delay"),
        ("Heartbeat", "error"),
        ("OffsetCommit", "withhold"),
    ],
)
def test_a_message_fault_silences_nothing(api, action):
    """A member heartbeats on by its own timers whatever became of an answer (the Java consumer sends
    on its interval regardless): declared as a silence, its eviction was a false late-eviction."""
    entry = {"fault_id": "f1", "kind": "message", "at_s": 0, "target": "consumer-1", "duration_s": 1}
    options = {"api": api, "action": action, **({"error": "REBALANCE_IN_PROGRESS"} if action == "error" else {})}
    effects = catalogue.from_spec({**entry, **options}).effects
    assert (effects.silences, effects.silenced_as) == (None, None)


def withheld_heartbeat(b, *, started_ms: float = 5_000, close_after_ms: int = 30_000):
    """consumer-2's Heartbeat answers are withheld from ``started_ms`` (fault f1): the proxy closes the
    connection ``close_after_ms`` after the request, the member's request timeout."""
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    fault = catalogue.from_spec(
        {"fault_id": "f1", "kind": "message", "at_s": 5, "target": "consumer-2", "duration_s": 60}
        | {"api": "Heartbeat", "action": "withhold"}
    )
    b.at(started_ms).emit(
        "fault_started",
        "fault",
        fault_id="f1",
        kind="message",
        target="consumer-2",
        params={},
        effects=fault.effects.to_event(),
    )
    b.at(started_ms + 200).emit(
        "message_faulted",
        "message-proxy",
        fault_id="f1",
        member="consumer-2",
        broker="broker-1",
        api="Heartbeat",
        api_version=4,
        correlation_id=17,
        action="withhold",
        close_after_ms=close_after_ms,
    )
    return c1, c2


def test_a_rejoin_after_a_withheld_heartbeat_names_the_fault(history_builder):
    """The member sees what became of a withheld answer only when the connection closes, its request
    timeout after the request: its rejoin then is the message's doing, though long after it."""
    b = history_builder(topics={"events": 2})
    withheld_heartbeat(b)
    b.at(35_300).coordinator(
        "coordinator_preparing_rebalance", old_generation=1, reason="Updating metadata for member consumer-2-1-id"
    )
    b.rebalance(2, {"consumer-1": [0], "consumer-2": [1]}, at=35_350)
    [w] = [w for w in explain_rebalances(History(b.build()))[2].waits if w.phase == "trigger"]
    assert (w.cause, w.member) == ("message", "consumer-2")
    assert w.detail.startswith(
        "consumer-2's Heartbeat response never came (the proxy withheld it and closed the "
        "connection 30000 ms after the request) (fault f1)"
    ), w.detail


def test_an_eviction_during_a_withheld_heartbeat_names_the_fault_and_is_no_late_eviction(history_builder):
    """Evicted two sessions after the fault began (as the Java consumer cut inbound is): no silence was
    declared, so no late-eviction, and the explanation names the running fault."""
    b = history_builder(topics={"events": 2})
    c1, _ = withheld_heartbeat(b, close_after_ms=600_000)
    b.at(23_900).coordinator(
        "coordinator_preparing_rebalance",
        old_generation=1,
        reason="removing member consumer-2-1-id on heartbeat expiration",
    )
    c1.at(24_000).revoked()
    c1.at(24_010).join_sent()
    c1.at(24_020).joined(2, leader=True)
    c1.at(24_025).synced()
    c1.at(24_030).assigned(0, 1)
    b.at(24_040).coordinator("coordinator_stabilized", generation=2, members=1)
    b.at(65_000).healed("message", "consumer-2")
    b.at(70_000).done()
    events = b.build()
    result = check_history(events, {"convergence": {"within_s": 600}}).checks["convergence"]
    assert [v for v in result.violations if v.kind == "late-eviction"] == []
    [w] = [w for w in explain_rebalances(History(events))[2].waits if w.phase == "trigger"]
    assert (w.cause, w.member) == ("session-timeout", "consumer-2")
    assert w.detail.startswith("consumer-2 went silent during fault f1 (message)"), w.detail
