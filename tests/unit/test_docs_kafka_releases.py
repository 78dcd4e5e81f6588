"""docs/inputs.md's Kafka releases section: its examples validate, its refusals are the ones
validation gives, its table names the catalogue's tested releases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.components import versions
from harness.scenario import load_scenario
from runtime.errors import ScenarioError
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]
SECTION = (REPO / "docs" / "inputs.md").read_text().split("## Kafka releases", 1)[1].split("\n## ", 1)[0]
BASE = {"name": "s", "duration_s": 30, "topics": [{"name": "events", "partitions": 3}]}


def _write(tmp_path, data) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**BASE, **data}))
    return path


@pytest.mark.parametrize("block", re.findall(r"```yaml\n(.*?)```", SECTION, flags=re.S))
def test_the_examples_validate(tmp_path, block):
    load_scenario(_write(tmp_path, yaml.safe_load(block)))


REFUSED = {
    "Kafka 2.8.0 is older": {"cluster": {"kafka": "2.8.0"}},
    "Kafka 4.5 is newer": {"cluster": {"kafka": "4.5"}},
    "Kafka 4.0.2 has no zookeeper mode": {"cluster": {"kafka": "4.0", "metadata": "zookeeper"}},
    "on Kafka 3.7.2 needs": {"cluster": {"kafka": "3.7.2"}, "workload": {"protocol": "consumer"}},
    "Kafka 3.7.2's consumer protocol (early access) answers": {
        "cluster": {"kafka": "3.7.2", "metadata": "kraft"},
        "workload": {"protocol": "consumer"},
    },
    "zk-eager rebalances": {"cluster": {"kafka": "4.4"}, "workload": {"protocol": "zk-eager"}},
}


@pytest.mark.parametrize("start", REFUSED)
def test_each_refusal_reads_as_documented(tmp_path, start):
    path = _write(tmp_path, REFUSED[start])
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    said = unlined(str(info.value)).replace(str(path), "s.yaml")
    documented = [line.removeprefix("error: ") for line in SECTION.splitlines() if start in line]
    assert documented == [said]
    assert info.value.exit_code == 2


def test_the_table_names_every_tested_release():
    for version in versions.TESTED_KAFKA_RELEASES:
        assert version in SECTION
