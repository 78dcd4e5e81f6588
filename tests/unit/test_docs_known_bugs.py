"""docs/known-bugs.md as written: its commands name real commands, options and files, and the
corpus suite it runs validates with a variant per scenario of the corpus."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from harness.campaigns import bug_corpus
from harness.campaigns.suite import load_suite
from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "known-bugs.md").read_text()
COMMANDS = [
    shlex.split(line.split("#")[0])
    for block in re.findall(r"^```(?:sh)?\n(.*?)^```$", DOC, flags=re.M | re.S)
    for line in block.splitlines()
    if line.startswith(("rebalance-lab ", "python3 "))
]


def test_each_command_is_real():
    assert COMMANDS
    for argv in COMMANDS:
        if argv[0] == "python3":
            script = REPO / argv[1]
            assert script.is_file(), argv
            text = script.read_text()
            assert all(f'"{o}"' in text for o in argv[2:] if o.startswith("--")), argv
            continue
        command, *args = argv[1:]
        assert command in main.commands, argv
        params = {o for p in main.commands[command].params for o in getattr(p, "opts", ())}
        assert {a for a in args if a.startswith("--")} <= params, argv
        for arg in args:
            if arg.endswith(".yaml"):
                assert (REPO / arg).is_file(), f"{arg}: no such file (a bug of the corpus renamed?)"


def test_the_corpus_suite_runs_every_scenario_of_the_corpus():
    suite = load_suite(REPO / "suites" / "known-bugs.yaml")
    bugs = bug_corpus.load_corpus()
    names = {b.affected["name"] for b in bugs} | {b.fixed["name"] for b in bugs if b.fixed}
    assert {v.scenario for v in suite.variants} == names
    expected = {v.scenario: v.expect for v in suite.variants}
    assert all(expected[b.affected["name"]] for b in bugs)  # every affected release must fail as named


def test_the_table_command_prints_every_bug():
    out = CliRunner().invoke(main, ["bugs"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert all(b.id in out.output for b in bug_corpus.load_corpus())


def test_the_page_names_the_files_a_bug_folder_holds():
    for name in (bug_corpus.FACTS, bug_corpus.AFFECTED, bug_corpus.FIXED, bug_corpus.MEASURED, "README.md"):
        assert f"bugs/<id>/{name}" in DOC, name
