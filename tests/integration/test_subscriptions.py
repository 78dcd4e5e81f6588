"""Members of one group on different topics, in racks, on a real broker: the shipped
scenario scenarios/mixed-subscriptions.yaml (two members on `orders`, two on `orders` and
`payments`; one of the latter crashed and restarted, then a fifth member of the latter
started by a scale-up) passes every check, and its history shows what each member
subscribed to, that none owned a partition of a topic it did not subscribe to, and the racks."""

from __future__ import annotations

from collections import defaultdict

from tests.integration.conftest import REPO, assert_healed


def test_members_on_different_topics_pass_a_crash_and_a_scale_up(run_scenario):
    run = run_scenario(REPO / "scenarios" / "mixed-subscriptions.yaml")
    assert run.exit_code == 0, run.output[-3000:]
    verdict = run.verdict
    assert verdict["ok"] and verdict["violations"] == [], verdict["violations"]
    assert all(c["status"] == "passed" for c in verdict["checks"].values()), verdict["checks"]
    orders, payments = run.topic("orders"), run.topic("payments")

    # Each member's subscription, as it started: consumers 1-2 orders only, 3-4 both, the
    # restarted consumer-3 both again, consumer-5 (the scale-up names "both") both.
    started = {(e["member"], e["incarnation"]): e for e in run.named("consumer_started")}
    subscribed = {key: set(e["subscription"]["topics"]) for key, e in started.items()}
    names = {key: e["subscription"]["name"] for key, e in started.items()}
    assert names == {
        ("consumer-1", 1): "orders-only",
        ("consumer-2", 1): "orders-only",
        ("consumer-3", 1): "both",
        ("consumer-3", 2): "both",
        ("consumer-4", 1): "both",
        ("consumer-5", 1): "both",
    }, names
    assert subscribed[("consumer-1", 1)] == {orders} and subscribed[("consumer-5", 1)] == {orders, payments}
    [run_started] = run.named("run_started")
    assert [(s["name"], s["members"]) for s in run_started["subscriptions"]] == [
        ("orders-only", ["consumer-1", "consumer-2"]),
        ("both", ["consumer-3", "consumer-4"]),
    ]

    # Nobody owned a partition of a topic it did not subscribe to; payments was owned, and only
    # by members subscribed to it.
    owned = defaultdict(set)
    for e in run.named("partitions_assigned"):
        owned[(e["member"], e["incarnation"])].update(p["topic"] for p in e["partitions"])
    assert all(topics <= subscribed[key] for key, topics in owned.items()), dict(owned)
    assert any(payments in topics for topics in owned.values())
    assert verdict["checks"]["assignment-validity"]["detail"]["layouts_checked"]  # roundrobin, judged per subscriber

    # The crash and the scale-up happened.
    faults = {e["kind"]: e for e in run.named("fault_started")}
    assert faults["crash"]["target"] == "consumer-3" and faults["crash"]["effects"]["down"] == "killed"
    assert started[("consumer-3", 2)]["mono_ms"] > faults["crash"]["mono_ms"]
    assert started[("consumer-5", 1)]["mono_ms"] > faults["scale"]["mono_ms"]
    assert faults["scale"]["details"]["changed"] == ["consumer-5"]

    # Racks: the broker's, set in its configuration and recorded; each member's client.rack.
    assert run_started["broker_racks"] == {"broker-1": "rack-a"}
    config = (run.run_dir / "cluster" / "config" / "broker-1.properties").read_text()
    assert "broker.rack=rack-a" in config.splitlines()
    racks = {key: e["client_rack"] for key, e in started.items()}
    assert racks[("consumer-1", 1)] == racks[("consumer-3", 2)] == racks[("consumer-5", 1)] == "rack-a"
    assert racks[("consumer-2", 1)] == racks[("consumer-4", 1)] == "rack-b"
    assert_healed(run)
