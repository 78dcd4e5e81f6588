"""The brokers' bounds on a group's size (group.max.size, group.consumer.max.size): a scenario
that sets one its group can outgrow is refused (file, key, reason, exit 2), and a run records
the ones in effect in run_started.group_settings."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.run.loop import INITIAL_REBALANCE_DELAY_MS, group_settings
from harness.scenario import load_scenario
from harness.scenario.cluster import GROUP_SIZE_LIMIT_DEFAULT
from runtime.errors import ScenarioError
from tests.lines import unlined


def write(tmp_path, protocol="classic-eager", consumers=3, broker_config=None, **extra):
    data = {
        "name": "limits",
        "duration_s": 30,
        "cluster": {"kafka": "4.1", "brokers": 1, "broker_config": broker_config or {}},
        "topics": [{"name": "events", "partitions": 8}],
        "workload": {"protocol": protocol, "consumers": consumers},
        **extra,
    }
    path = tmp_path / "limits.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "protocol, config, extra, key, reason",
    [
        ("classic-eager", {"group.max.size": 2}, {}, "group.max.size", "2, but the group may have 3 members"),
        ("consumer", {"group.consumer.max.size": "2"}, {}, "group.consumer.max.size", "2, but the group may have 3"),
        # a scale-up past the bound counts: the group may grow to 5
        (
            "classic-cooperative",
            {"group.max.size": 4},
            {"faults": [{"kind": "scale", "consumers": 5, "at_s": 5}]},
            "group.max.size",
            "4, but the group may have 5 members (classic protocol): raise it to 5 or more",
        ),
        ("classic-eager", {"group.max.size": "many"}, {}, "group.max.size", "'many' is not a whole number >= 1"),
        # a static group at exactly its bound: a restarted member is refused until its old session ends
        (
            "classic-static",
            {"group.max.size": 3},
            {},
            "group.max.size",
            "3, but the group may have 3 members (classic protocol, and a static member that restarts is "
            "counted before it replaces itself): raise it to 4 or more",
        ),
    ],
)
def test_a_bound_the_group_can_outgrow_is_refused(tmp_path, protocol, config, extra, key, reason):
    path = write(tmp_path, protocol, broker_config=config, **extra)
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert f"cluster.broker_config.{key}" in str(e.value), str(e.value)
    assert reason in unlined(str(e.value)), unlined(str(e.value))
    result = CliRunner().invoke(main, ["schedule", str(path)])
    out = unlined(result.output)
    assert result.exit_code == 2 and str(path) in out and key in out and reason in out, out
    assert "Traceback" not in out


def test_a_bound_of_the_other_protocol_or_one_the_group_fits_is_taken(tmp_path):
    # a classic group is not bounded by group.consumer.max.size, nor one that fits its bound
    s = load_scenario(write(tmp_path, broker_config={"group.consumer.max.size": 1, "group.max.size": 3}))
    assert s.group_size_limits() == {"group.max.size": 3, "group.consumer.max.size": 1}


def test_a_run_records_the_bounds_in_effect(tmp_path):
    s = load_scenario(write(tmp_path, "consumer", broker_config={"group.consumer.max.size": 50}))
    assert group_settings(s)["group_size_limits"] == {
        "group.max.size": GROUP_SIZE_LIMIT_DEFAULT,  # Kafka's default: Integer.MAX_VALUE
        "group.consumer.max.size": 50,
    }
    classic = load_scenario(write(tmp_path))
    assert group_settings(classic) == {
        "initial_rebalance_delay_ms": INITIAL_REBALANCE_DELAY_MS,
        "group_size_limits": {
            "group.max.size": GROUP_SIZE_LIMIT_DEFAULT,
            "group.consumer.max.size": GROUP_SIZE_LIMIT_DEFAULT,
        },
    }
    assert GROUP_SIZE_LIMIT_DEFAULT == 2**31 - 1


def test_the_docs_give_kafka_s_default():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "scale.md").read_text()
    assert f"default to {GROUP_SIZE_LIMIT_DEFAULT} (Integer.MAX_VALUE)" in " ".join(page.split())
