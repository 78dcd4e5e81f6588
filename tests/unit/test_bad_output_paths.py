"""Output paths and options a command cannot use: exit code 2 and one message naming the option,
the path and the reason, before anything starts — never a traceback (issue 40). Each command
that writes goes through runtime.output_dirs; tests/fuzzing.py's nothing_starts turns whatever
would start a cluster, a run or Spark into a failure here."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from runtime.errors import SetupError
from runtime.output_dirs import make_dirs, output_dir_problem
from tests.fuzzing import nothing_starts

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "scenarios/smoke.yaml")


def cli(*args: str):
    with nothing_starts():
        result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.fixture
def afile(tmp_path) -> Path:
    (tmp_path / "afile").write_text("x")
    return tmp_path / "afile"


def test_output_dir_problems_are_named_before_writing(tmp_path, afile):
    assert output_dir_problem(afile) == "a file, not a directory"
    assert output_dir_problem(afile / "out") == f"cannot be made a directory: {afile} is a file"
    assert output_dir_problem(Path(f"{tmp_path}/a\0b")) == "contains a NUL byte"
    assert output_dir_problem(tmp_path / ("n" * 300)).startswith("a name longer than 255 bytes")
    assert output_dir_problem(tmp_path.joinpath(*["d" * 200] * 25)) == "longer than 4095 bytes"
    assert output_dir_problem(tmp_path / "new" / "deeper") is None


def test_what_only_a_write_tells_is_bad_input_too():
    with pytest.raises(SetupError, match=r"^--out /proc/rl-out: cannot be made a directory: No such file"):
        make_dirs(Path("/proc/rl-out"), "--out")


@pytest.mark.parametrize("where", ["under-a-file", "proc", "a-file", "non-empty", "long-name"])
def test_compose_render_refuses_an_output_it_cannot_use(tmp_path, afile, where):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "kept.txt").write_text("the user's")
    out = {
        "under-a-file": afile / "out",
        "proc": Path("/proc/rl-out"),
        "a-file": afile,
        "non-empty": tmp_path / "full",
        "long-name": tmp_path / ("n" * 300),
    }[where]
    result = cli("compose", "render", SMOKE, "-o", str(out))
    assert result.exit_code == 2 and f"error: --output {out}: " in result.output, result.output
    assert (tmp_path / "full" / "kept.txt").read_text() == "the user's"


def test_compose_render_writes_into_a_new_or_empty_directory(tmp_path):
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        assert cli("compose", "render", SMOKE, "-o", str(out)).exit_code == 0
        assert (out / "compose.yaml").exists()


@pytest.mark.parametrize(
    "args, option",
    [
        (["run", SMOKE], "--runs-dir"),
        (["compare", SMOKE, "--protocols", "classic-eager"], "--runs-dir"),
        (["suite", str(REPO / "suites/release.yaml")], "--runs-dir"),
        (["capacity", str(REPO / "profiles/capacity-small.yaml")], "--runs-dir"),
        (["analyze", "/nonexistent-run"], "--out"),
        (["cluster", "up"], "--workdir"),
    ],
)
@pytest.mark.parametrize("where", ["under-a-file", "nul"])
def test_every_command_that_writes_refuses_before_starting(tmp_path, afile, args, option, where):
    out = str(afile / "out") if where == "under-a-file" else f"{tmp_path}/a\0b"
    result = cli(*args, option, out)
    assert result.exit_code == 2, result.output
    assert (
        f"{option} {out}: cannot be made a directory: {afile} is a file"
        if where == "under-a-file"
        else "contains a NUL byte"
    ) in result.output, result.output


@pytest.mark.parametrize(
    "args",
    [
        ["run", SMOKE],
        ["suite", str(REPO / "suites/release.yaml")],
        ["capacity", str(REPO / "profiles/capacity-small.yaml")],
    ],
)
def test_a_runs_dir_only_a_write_can_refuse_is_refused_before_starting(args):
    result = cli(*args, "--runs-dir", "/proc/rl-runs")
    assert result.exit_code == 2 and "/proc/rl-runs: cannot be made a directory" in result.output, result.output


def test_analyze_refuses_missing_or_unreadable_runs_before_starting_spark(tmp_path):
    result = cli("analyze", str(tmp_path / ("n" * 300)), "/nonexistent-run", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and "cannot be read: File name too long" in result.output, result.output
    assert "/nonexistent-run: no such run directory" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("written", ["summary.md", "verdict.json"])
def test_check_write_where_its_file_is_a_directory(tmp_path, history_builder, written):
    from tests.unit.test_fuzz_inputs import small_story

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_bytes(small_story(history_builder))
    (run_dir / written).mkdir()
    result = cli("check", str(run_dir), "--write")
    assert result.exit_code == 2 and f"--write: {run_dir}" in result.output and "cannot write it" in result.output, (
        result.output
    )


@pytest.mark.parametrize("value", ["nan", "inf", "1e999"])
def test_shrink_budget_must_be_finite(tmp_path, value):
    result = cli("shrink", str(tmp_path), "--max-minutes", value)
    assert result.exit_code == 2 and "is not a finite number" in result.output, result.output
