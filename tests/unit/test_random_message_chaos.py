"""scenarios/random-message-chaos.yaml: its seed draws message faults among today's kinds on both
protocols it is documented to pass on (the runs that passed: benchmarks/README.md and the docs).
A change to the draw that moves this seed off message faults fails here, not silently in a run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.scenario import load_scenario_data

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "random-message-chaos.yaml"


@pytest.mark.parametrize("protocol", ["classic-cooperative", "consumer"])
def test_the_seed_draws_message_faults_among_other_kinds(protocol, tmp_path):
    data = yaml.safe_load(SCENARIO.read_text())
    data["workload"]["protocol"] = protocol
    drawn = load_scenario_data(data, tmp_path / "s.yaml").schedule()
    kinds = {f["kind"] for f in drawn}
    assert "message" in kinds and kinds - {"message"}, kinds
    assert set(data["random_faults"]["kinds"]) >= kinds
    # Each message fault on one member's own answers, of an API its protocol sends.
    for f in (f for f in drawn if f["kind"] == "message"):
        assert f["target"].startswith("consumer-")
        assert f["api"] in (
            ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "OffsetFetch", "FindCoordinator")
            if protocol == "classic-cooperative"
            else ("ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch", "FindCoordinator")
        ), f
