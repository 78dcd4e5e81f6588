"""An old client release, really run: the smoke scenario's members on confluent-kafka 2.2.0, in
that release's own environment, judged by the same oracle. The full matrix (2.2.0, 2.6.1, 2.10.1,
2.16.1) is benchmarks/client_versions.py."""

from __future__ import annotations

import json

import yaml

from tests.integration.conftest import REPO, assert_healed

OLD = "confluent-kafka==2.2.0"


def test_smoke_on_an_old_client_passes_and_its_members_loaded_that_librdkafka(run_scenario):
    smoke = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    run = run_scenario({**smoke, "name": "smoke-client-2-2-0", "workload": {**smoke["workload"], "client": OLD}})
    assert run.exit_code == 0, run.output[-3000:]
    assert run.verdict["status"] == "pass", run.verdict["checks"]
    [started] = run.named("run_started")
    assert started["client"] == OLD
    assert json.loads((run.run_dir / "run.json").read_text())["client"] == OLD
    members = run.named("consumer_started")
    assert {m["member"] for m in members} == {"consumer-1", "consumer-2", "consumer-3"}
    # What each process really loaded: librdkafka's own version string, not the requirement's.
    assert {(m["client_library"], m["client_version"]) for m in members} == {("librdkafka", "2.2.0")}
    # Its lines were read: every member joined with a generation, and nothing went unrecognised.
    assert {e["member"] for e in run.named("group_joined") if e["generation"] >= 1} == {m["member"] for m in members}
    assert not run.named("log_unrecognised")
    # The producer and the observer stay on the harness's own (pinned) client.
    assert not any(e.get("client_version") for e in run.named("producer_started"))
    assert_healed(run)
