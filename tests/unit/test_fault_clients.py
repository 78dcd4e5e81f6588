"""The members' client against what a fault moves them to: a protocol-migration's generation, a
rolling-client-upgrade's release — checked by the rule workload.client is (workload.client_problem),
with the faults' keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.scenario import load_scenario
from runtime.errors import ScenarioError
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]
INPUTS = (REPO / "docs" / "inputs.md").read_text()
MIGRATION = yaml.safe_load((REPO / "scenarios" / "protocol-migration.yaml").read_text())

NO_KIP848 = (
    "confluent-kafka==2.2.0: protocol consumer needs confluent-kafka>=2.4.0 (librdkafka speaks KIP-848's "
    "ConsumerGroupHeartbeat v0 (Kafka 3.7/3.8's early access) from 2.4.0 to 2.9.x, v1 (Kafka 4.0's GA) from 2.10.0)"
)


def load(tmp_path: Path, data: dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def problems(tmp_path: Path, data: dict) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, data)
    return unlined(info.value.problems)


def migration(client: str | None) -> dict:
    data = yaml.safe_load(yaml.safe_dump(MIGRATION))
    if client:
        data["workload"]["client"] = client
    return data


def test_a_migration_to_the_consumer_protocol_on_a_client_without_kip848_is_refused(tmp_path):
    [said] = problems(tmp_path, migration("confluent-kafka==2.2.0"))
    assert said == ("faults[1].to", NO_KIP848)  # the workload's own refusal, word for word


def test_a_migration_to_the_consumer_protocol_on_a_client_speaking_another_heartbeat_version_is_refused(tmp_path):
    [said] = problems(tmp_path, migration("confluent-kafka==2.6.1"))
    key, reason = said
    assert key == "faults[1].to"
    assert reason.startswith(
        "confluent-kafka==2.6.1 speaks KIP-848's ConsumerGroupHeartbeat v0; Kafka 4.4.0's consumer protocol (GA) "
        "is v1's: its brokers still answer the early access's v0, but the harness runs early-access clients on "
        "early-access brokers only (for it: confluent-kafka 2.10.0 on)"
    )
    assert f"workload.client: {reason}" in INPUTS  # the wording the workload-level refusal uses


def test_a_migration_to_the_consumer_protocol_on_the_default_client_and_4_4_is_accepted(tmp_path):
    scenario = load(tmp_path, migration(None))
    assert [f.to for f in scenario.faults] == ["consumer", "classic-eager"]


def upgrade(frm: str, to: str) -> dict:
    return {
        "name": "s",
        "duration_s": 30,
        "cluster": {"kafka": "3.8.1", "metadata": "kraft", "brokers": 1},
        "topics": [{"name": "events", "partitions": 2, "replication_factor": 1}],
        "workload": {"protocol": "consumer", "client": frm, "consumers": 2},
        "faults": [{"kind": "rolling-client-upgrade", "at_s": 3, "to": to}],
    }


def test_a_rolling_client_upgrade_to_a_client_the_brokers_heartbeat_cannot_serve_is_refused(tmp_path):
    load(tmp_path, upgrade("confluent-kafka==2.6.1", "confluent-kafka==2.8.0"))  # v0 to v0: runs
    [said] = problems(tmp_path, upgrade("confluent-kafka==2.6.1", "confluent-kafka==2.16.1"))
    assert said == (
        "faults[1].to",
        "confluent-kafka==2.16.1 speaks KIP-848's ConsumerGroupHeartbeat v1; Kafka 3.8.1's consumer protocol "
        "(early access) answers v0 only: its members would never find their coordinator "
        "(for it: confluent-kafka 2.4.0 … before 2.10.0)",
    )


def test_a_migration_is_checked_against_the_client_the_members_run_by_then(tmp_path):
    """A rolling upgrade before the migration decides the client the migrated members run."""
    data = migration("confluent-kafka==2.8.0")
    data["faults"] = [
        {"kind": "rolling-client-upgrade", "at_s": 2, "to": "confluent-kafka==2.10.1", "interval_s": 1},
        {"kind": "protocol-migration", "at_s": 20, "to": "consumer", "interval_s": 2},
    ]
    load(tmp_path, data)  # 2.10.1 speaks v1, which 4.4 serves
    data["faults"][0]["to"] = "confluent-kafka==2.9.0"  # still v0
    [(key, reason)] = problems(tmp_path, data)
    assert key == "faults[2].to" and reason.startswith(
        "confluent-kafka==2.9.0 speaks KIP-848's ConsumerGroupHeartbeat v0"
    )


def test_setup_with_kafka_and_client_installs_both(monkeypatch):
    from click.testing import CliRunner

    from harness.cli import setup as setup_cli
    from harness.components import install

    done = []
    monkeypatch.setattr(setup_cli, "_setup_clients", lambda texts: done.append(("client", texts)))
    monkeypatch.setattr(install, "setup_all", lambda report, lines: done.append(("kafka", lines)) or False)
    result = CliRunner().invoke(setup_cli.setup, ["--kafka", "3.8.1", "--client", "confluent-kafka==2.6.1"])
    assert result.exit_code == 0, unlined(result.output)
    assert done == [("client", ("confluent-kafka==2.6.1",)), ("kafka", ["3.8.1"])]
    done.clear()
    assert CliRunner().invoke(setup_cli.setup, ["--client", "confluent-kafka==2.6.1"]).exit_code == 0
    assert done == [("client", ("confluent-kafka==2.6.1",))]  # --client alone: those only
