"""The generator's opt-in fields and events: each option writes them, the history passes the
integrity checks, and the oracle judges it as it would a real run's."""

import json

from analysis.synthetic import SynthSpec, synthetic_history
from oracle import check_history, load_history


def _history(**options):
    return synthetic_history(SynthSpec(seed=3, fault="none", duration_s=15, **options))


def check_integrity(tmp_path, events):
    """Loads the history as the oracle does: a broken promise raises BrokenHistory."""
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    load_history(path)


def _named(events, name):
    return [e for e in events if e["name"] == name]


def test_defaults_write_none_of_the_opt_in_fields():
    events = _history()
    started = _named(events, "run_started")[0]
    assert "metadata" not in started and "broker_racks" not in started
    assert all("client_rack" not in e for e in _named(events, "consumer_started"))
    assert not _named(events, "node_restarted") and not _named(events, "log_unrecognised")


def test_metadata_and_racks(tmp_path):
    events = _history(metadata="kraft", racks=True)
    started = _named(events, "run_started")[0]
    assert started["metadata"] == "kraft" and started["broker_racks"] == {"broker-1": "rack-a"}
    assert {e["client_rack"] for e in _named(events, "consumer_started")} == {"rack-a"}
    check_integrity(tmp_path, events)
    assert check_history(events).to_dict()["status"] == "pass"


def test_rolling_upgrade_writes_the_restart_and_finalization(tmp_path):
    events = _history(metadata="kraft", upgrade_to="4.4.0")
    (restart,) = _named(events, "node_restarted")
    (final,) = _named(events, "cluster_finalized")
    assert restart["kafka"] == final["kafka"] == "4.4.0" and final["level"] == "4.4-IV0"
    brokers = [e["name"] for e in events if e.get("process") == "broker-1" and e["name"].startswith("process_")]
    assert brokers == ["process_exited", "process_started"]
    check_integrity(tmp_path, events)
    assert check_history(events).to_dict()["status"] == "pass"


def test_log_unrecognised_makes_the_verdict_incomplete(tmp_path):
    events = _history(log_unrecognised=True, client_version="2.2.0")
    assert len(_named(events, "log_unrecognised")) == 3
    check_integrity(tmp_path, events)
    assert check_history(events).to_dict()["status"] == "incomplete"


def test_a_hung_close_is_killed_and_named(tmp_path):
    events = _history(close_hang=True)
    [exit_] = [e for e in _named(events, "process_exited") if e.get("escalated_after_ms") is not None]
    assert (exit_["process"], exit_["returncode"]) == ("consumer-3", -9)
    check_integrity(tmp_path, events)
    verdict = check_history(events).to_dict()
    assert verdict["status"] == "fail"
    assert [(v["check"], v["kind"]) for v in verdict["violations"]] == [("client-health", "close-hang")]
