"""The corpus of known bugs: every folder complete and consistent, and the docs generated from it."""

import shutil
from pathlib import Path

import pytest
import yaml

from harness.campaigns import bug_corpus
from harness.scenario import load_scenario
from runtime.errors import ScenarioError

FACTS = {
    "title": "close crashes before the first assignment",
    "component": "librdkafka",
    "report": "https://github.com/confluentinc/librdkafka/issues/1",
    "fix": "https://github.com/confluentinc/librdkafka/pull/2",
    "affected": "2.0.0 – 2.2.x",
    "trigger": "a member stopped right after it joined",
    "symptom": "SIGSEGV in close",
}
SCENARIO = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "smoke.yaml").read_text())


def toy_bug(root: Path, bug_id: str = "librdkafka-1", **changes) -> Path:
    folder = root / bug_id
    folder.mkdir(parents=True)
    (folder / "bug.yaml").write_text(yaml.safe_dump(FACTS))
    affected = {**SCENARIO, "name": f"{bug_id}-affected", "expect": {"fails": ["client-health/library-crash"]}}
    affected["workload"] = {**SCENARIO["workload"], "client": "confluent-kafka==2.2.0"}
    fixed = {k: v for k, v in affected.items() if k != "expect"} | {"name": f"{bug_id}-fixed"}
    fixed["workload"] = {**affected["workload"], "client": "confluent-kafka==2.3.0"}
    fixed |= changes
    (folder / "affected.yaml").write_text(yaml.safe_dump(affected))
    (folder / "fixed.yaml").write_text(yaml.safe_dump(fixed))
    return folder


@pytest.mark.parametrize("bug", bug_corpus.load_corpus(), ids=lambda b: b.id)
def test_each_bug_runs_as_written(bug):
    """Both scenarios validate (the pinned release too), and the README says what the files say."""
    for file in (bug_corpus.AFFECTED, bug_corpus.FIXED):
        if (bug.folder / file).is_file():
            load_scenario(bug.folder / file)
    assert (bug.folder / "README.md").read_text() == bug_corpus.readme(bug), "rebalance-lab bugs --write-docs"


def test_the_docs_table_is_the_corpus():
    assert bug_corpus.stale_docs(bug_corpus.load_corpus()) == {}, "rebalance-lab bugs --write-docs"


def test_a_toy_bug_reads_and_renders(tmp_path):
    toy_bug(tmp_path)
    [bug] = bug_corpus.load_corpus(tmp_path)
    assert (bug.release(bug.affected), bug.release(bug.fixed)) == ("2.2.0", "2.3.0")
    assert bug.names_it() == "`client-health/library-crash`" and bug.rate() == "not measured"
    (bug.folder / "measured.json").write_text(
        '{"date": "2026-11-28", "affected": {"runs": 5, "reproduced": 4, "seconds": [50, 70]},'
        ' "fixed": {"runs": 5, "passed": 5, "seconds": [60]}}'
    )
    [bug] = bug_corpus.load_corpus(tmp_path)
    row = bug_corpus.table([bug]).splitlines()[-1]
    assert "| 2.2.0 → 2.3.0 |" in row and "| 4/5 → 5/5 pass | 60 s |" in row
    assert "2026-11-28" in bug_corpus.readme(bug)


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"duration_s": 999}, "fixed.yaml"),  # another scenario: its pass says nothing of the fix
        ({"name": "other"}, "fixed.yaml.name"),
        ({"expect": {"fails": ["no-loss"]}}, "fixed.yaml.expect"),
    ],
)
def test_a_fixed_scenario_that_is_not_the_affected_one_is_refused(tmp_path, changes, key):
    toy_bug(tmp_path, **changes)
    with pytest.raises(ScenarioError) as e:
        bug_corpus.load_corpus(tmp_path)
    assert key in [k for k, _ in e.value.problems]


def test_bad_facts_name_the_file_and_key(tmp_path):
    folder = toy_bug(tmp_path)
    (folder / "bug.yaml").write_text(yaml.safe_dump({**FACTS, "component": "jvm"}))
    with pytest.raises(ScenarioError) as e:
        bug_corpus.load_corpus(tmp_path)
    assert str(folder / "bug.yaml") in str(e.value) and "component" in str(e.value)


def test_an_unfixed_bug_has_no_fixed_scenario(tmp_path):
    folder = toy_bug(tmp_path)
    (folder / "fixed.yaml").unlink()
    [bug] = bug_corpus.load_corpus(tmp_path)
    assert "not fixed yet" in bug_corpus.table([bug])
    shutil.rmtree(folder)
