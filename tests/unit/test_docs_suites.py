"""docs/suites.md as written: its suite file validates (every axis, version axes included, and
every exclude matching a variant), the variant id and run name it quotes are that suite's, and
its example test module is Python that uses the plugin's real fixtures and overrides."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from harness.campaigns.suite import load_suite

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "suites.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", DOC, flags=re.M | re.S)


def _suite(tmp_path: Path):
    [text] = [body for lang, body in BLOCKS if lang == "yaml" and not body.startswith("# expected failures")]
    path = tmp_path / "suites" / "release.yaml"  # beside a scenarios/ directory, as ../scenarios/ says
    path.parent.mkdir()
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    path.write_text(text)
    return load_suite(path)


def test_the_suite_file_validates_and_names_its_variants_as_the_page_says(tmp_path):
    suite = _suite(tmp_path)
    ids = {v.id for v in suite.variants}
    [quoted] = re.findall(r"Variant ids read `([^`]+)`", DOC)
    assert quoted in ids
    [named] = [v for v in suite.variants if v.id == quoted]
    assert f"`{named.run_name}`" in DOC  # the run directory's name the page gives
    [case] = re.findall(r'<testcase name="([^"]+)"', DOC)
    assert case in ids
    axes = {"kafka", "client"}
    assert all(getattr(v.axes, a) for v in suite.variants for a in axes)


def test_the_example_module_uses_the_plugins_fixtures_and_overrides():
    [module] = [body for lang, body in BLOCKS if lang == "python"]
    tree = ast.parse(module)
    fixtures = {a.arg for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for a in f.args.args}
    assert {"chaos_run", "lab_cluster"} <= fixtures
    overrides = {
        k.arg
        for c in ast.walk(tree)
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "chaos_run"
        for k in c.keywords
    }
    plugin = (REPO / "harness" / "pytest_plugin.py").read_text()
    axes = set(re.search(r"for axis in \(([^)]*)\)", plugin).group(1).replace('"', "").replace(" ", "").split(","))
    assert {"kafka", "client", "protocol", "seed"} <= overrides and overrides - {
        "workload__consumers",
        "expect",
    } <= axes


def test_the_expected_failures_example_validates_as_the_page_says(tmp_path):
    [text] = [body for lang, body in BLOCKS if lang == "yaml" and body.startswith("# expected failures")]
    path = tmp_path / "suites" / "release.yaml"
    path.parent.mkdir()
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    path.write_text(text)
    said = {v.id: v.expect and v.expect.describe() for v in load_suite(path).variants}
    faulty = (
        "fails no-loss/lost-write and contiguity/skip-at-handover (convergence/stalled may fail with it)"
        " in at least 1 of 3 attempts"
    )
    assert said == {
        "smoke[classic-eager]": None,
        "smoke[consumer]": None,
        "faulty-consumer[classic-eager]": faulty,
        "faulty-consumer[consumer]": faulty,
    }
    # the shipped release suite says the same of its faulty consumer
    shipped = load_suite(REPO / "suites" / "release.yaml")
    assert {v.expect and v.expect.describe() for v in shipped.variants if v.scenario == "faulty-consumer"} == {faulty}
    assert all(v.expect is None for v in shipped.variants if v.scenario != "faulty-consumer")
