"""The CI recipes (docs/ci/): the GitHub Actions and GitLab CI jobs are valid YAML whose one
run:/script: step is the script, that keep the JUnit file and the run directories even when
the suite fails, and cache the lab home's components; the script refuses what it cannot run
with exit 2 before installing anything. Its real run is tests/integration/test_ci_recipe.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.paths import components_dir, lab_home
from runtime.errors import EXIT_BAD_INPUT

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "docs" / "ci"
SCRIPT = CI / "rebalance-lab-ci.sh"
SCRIPT_CALL = "docs/ci/rebalance-lab-ci.sh"


def _default(variable: str) -> str:
    """The script's default for an RL_CI_* variable: `${VARIABLE:-default}`."""
    [default] = re.findall(rf"\${{{variable}:-([^}}]+)}}", SCRIPT.read_text())
    return default


OUT = _default("RL_CI_OUT")
# What the recipes cache: the lab home's downloads and builds, not its registry of running processes.
CACHED = (components_dir().relative_to(lab_home()).as_posix(), "spark-class-archive")


def test_the_class_archive_is_kept_where_the_recipes_cache_it(monkeypatch, tmp_path):
    import analysis.class_archive as class_archive

    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(class_archive, "_java", lambda: tmp_path / "bin" / "java")
    monkeypatch.setattr(class_archive, "_spark_jars", lambda: tmp_path / "jars")
    assert class_archive.archive_path().parent.relative_to(tmp_path).as_posix() == CACHED[1]


def test_github_actions_job_runs_the_script_caches_the_lab_home_and_uploads_always():
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text())
    [job] = workflow["jobs"].values()
    steps = job["steps"]
    assert [s["run"] for s in steps if "run" in s] == [SCRIPT_CALL]
    assert job["env"]["RL_CI_OUT"] == OUT
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    upload = uses["actions/upload-artifact"]
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == OUT
    report = uses["mikepenz/action-junit-report"]
    assert report["if"] == "always()" and report["with"]["report_paths"] == f"{OUT}/junit.xml"
    cache = uses["actions/cache"]
    assert cache["with"]["path"].split() == [f"~/.cache/rebalance-lab/{c}" for c in CACHED]
    assert "hashFiles('pyproject.toml', 'harness/components/versions.py')" in cache["with"]["key"]
    # the cache is restored before the script sets up, and the reports come after it
    order = [s.get("run") or s["uses"].split("@")[0] for s in steps]
    assert order.index("actions/cache") < order.index(SCRIPT_CALL) < order.index("actions/upload-artifact")


def test_gitlab_job_runs_the_script_caches_the_lab_home_and_keeps_artifacts_always():
    [job] = yaml.safe_load((CI / "gitlab-ci.yml").read_text()).values()
    assert job["script"] == [SCRIPT_CALL]
    assert job["variables"]["RL_CI_OUT"] == OUT
    assert job["artifacts"]["when"] == "always"
    assert [p.rstrip("/") for p in job["artifacts"]["paths"]] == [OUT]
    assert job["artifacts"]["reports"]["junit"] == f"{OUT}/junit.xml"
    home = job["variables"]["REBALANCE_LAB_HOME"].removeprefix("$CI_PROJECT_DIR/")
    cached = [p.rstrip("/") for p in job["cache"]["paths"]]
    assert [f"{home}/{c}" for c in CACHED] == cached[: len(CACHED)]
    assert job["cache"]["key"]["files"] == ["pyproject.toml", "harness/components/versions.py"]


def test_the_script_says_bad_input_with_the_contracts_code():
    assert re.search(rf"^EXIT_BAD_INPUT={EXIT_BAD_INPUT} ", SCRIPT.read_text(), re.M)
    assert os.access(SCRIPT, os.X_OK)


def _script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=30
    )


def test_a_suite_that_is_not_there_is_refused_before_anything_is_installed(tmp_path):
    env = {**os.environ, "RL_CI_VENV": str(tmp_path / "venv")}
    proc = _script("suites/no-such.yaml", env=env)
    assert proc.returncode == EXIT_BAD_INPUT
    assert f"rebalance-lab-ci: suite suites/no-such.yaml: no such file (relative paths start at {REPO})" in proc.stderr
    assert not (tmp_path / "venv").exists()


def test_the_tools_setup_needs_are_named_all_at_once(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "python3"):  # no java, mvn nor go
        which = shutil.which(tool)
        if which is None:
            pytest.fail(f"{tool} not on PATH")
        (bin_dir / tool).symlink_to(which)
    proc = _script("suites/release.yaml", env={**os.environ, "PATH": str(bin_dir)})
    assert proc.returncode == EXIT_BAD_INPUT
    assert "not on PATH: java (a JDK 17+) mvn (Apache Maven" in proc.stderr and "go (Go 1.23+" in proc.stderr


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.mark.parametrize("suite_code", [0, 1, 3, 4])
def test_the_script_exits_with_the_suites_code_and_leaves_junit_at_its_path(tmp_path, suite_code):
    """Installing and the suite stubbed: what the script does with what they leave."""
    venv, tools, out = tmp_path / "venv", tmp_path / "tools", tmp_path / "out"
    (venv / "bin").mkdir(parents=True)
    tools.mkdir()
    for tool in ("java", "mvn", "go"):
        _stub(tools / tool, "exit 0\n")
    _stub(venv / "bin" / "python", "exit 0\n")  # pip install -e .
    suite = (
        'case "$*" in\n'
        "  setup) exit 0;;\n"
        "esac\n"
        # suite FILE --runs-dir DIR --junit PATH --only X
        '[ "$5" = --junit ] && echo "<testsuites name=\\"$2\\"/>" > "$6"\n' + f'echo "$@" > "{tmp_path}/suite-args"\n'
        f"exit {suite_code}\n"
    )
    _stub(venv / "bin" / "rebalance-lab", suite)
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "RL_CI_VENV": str(venv), "RL_CI_OUT": str(out)}
    proc = _script("suites/release.yaml", "--only", "smoke*", env=env)
    assert proc.returncode == suite_code, proc.stderr
    assert (out / "junit.xml").read_text() == '<testsuites name="suites/release.yaml"/>\n'
    args = f"suite suites/release.yaml --runs-dir {out}/runs --junit {out}/junit.xml"
    assert (tmp_path / "suite-args").read_text() == args + " --only smoke*\n"
    assert f"rebalance-lab-ci: suite exit code {suite_code}" in proc.stderr
