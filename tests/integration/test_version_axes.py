"""A suite with `kafka` and `client` axes against real brokers: two releases (ZooKeeper mode
and KRaft) × the default client, one tiny scenario each; its JUnit names the axes, and what it
says each variant ran is what the run's history says it ran."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from oracle import load_history
from tests.integration.conftest import lab, small_scenario
from tests.junit_schema import assert_valid_junit

pytestmark = pytest.mark.integration

RELEASES = ["3.9.2", "4.4.0"]  # the default of each major, installed by `setup` (no first install here)
CLIENT = "confluent-kafka==2.16.1"  # the default, spelled out: the axis names it


@pytest.mark.timeout(300)
def test_a_suite_with_version_axes_runs_and_its_junit_names_them(tmp_path, components_installed):
    scenario = small_scenario("axes", duration_s=5, recovery={"timeout_s": 30, "stable_for_s": 1})
    scenario["workload"].update(consumers=1)
    (tmp_path / "axes.yaml").write_text(yaml.safe_dump(scenario))
    (tmp_path / "suite.yaml").write_text(
        yaml.safe_dump({"name": "axes", "scenarios": ["axes.yaml"], "matrix": {"kafka": RELEASES, "client": [CLIENT]}})
    )
    proc = lab("suite", str(tmp_path / "suite.yaml"), "--runs-dir", str(tmp_path / "runs"), timeout=280)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [out] = (tmp_path / "runs").glob("suite-*-axes")
    variants = json.loads((out / "suite.json").read_text())["variants"]
    ids = [f"axes[kafka {release}, {CLIENT}]" for release in RELEASES]
    assert [v["id"] for v in variants] == ids

    assert_valid_junit(out / "junit.xml")
    root = ET.parse(out / "junit.xml").getroot()
    assert [c.get("name") for c in root.iter("testcase")] == ids
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    for v, release in zip(variants, RELEASES, strict=True):
        events = list(load_history(Path(v["run_dir"])))
        [started] = [e for e in events if e["name"] == "run_started"]
        # what CI reads is what the run recorded it ran, and what was asked
        assert props[f"{v['id']}.kafka"] == started["kafka"] == release
        assert props[f"{v['id']}.client"] == started["client"] == CLIENT
        loaded = {e.get("client_version") for e in events if e["name"] == "consumer_started"}
        assert len(loaded) == 1 and None not in loaded, loaded  # the library version the member really loaded


@pytest.mark.timeout(600)
def test_compare_puts_one_generation_side_by_side_across_two_releases(tmp_path, components_installed):
    """`compare --kafka A --kafka B`: one generation, two releases, one row each, from what each
    run recorded."""
    scenario = small_scenario("axes-compare", duration_s=5, recovery={"timeout_s": 30, "stable_for_s": 1})
    (tmp_path / "axes.yaml").write_text(yaml.safe_dump(scenario))
    args = ["compare", str(tmp_path / "axes.yaml"), "--protocols", "classic-eager"]
    for release in RELEASES:
        args += ["--kafka", release]
    proc = lab(*args, "--runs-dir", str(tmp_path / "runs"), timeout=560)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [out] = (tmp_path / "runs").glob("compare-*")
    rows = json.loads((out / "compare.json").read_text())
    assert [(r["protocol"], r["kafka"]) for r in rows] == [("classic-eager", release) for release in RELEASES]
    for r in rows:
        assert r["ok"] and r["outcome"] == "completed", r
        assert r["client_version"], r  # the librdkafka its members really loaded
        recorded = json.loads((out / r["run_dir"].rsplit("/", 1)[-1] / "run.json").read_text())
        assert recorded["kafka"] == r["kafka"]
    assert "Side by side" in proc.stdout and all(release in proc.stdout for release in RELEASES)
