"""Every example of the README and docs/ holds: each fenced ```yaml block that is a scenario, a suite
or a capacity sweep loads through the project's own loaders, and each ```sh / ```console command of
`rebalance-lab …` (or `python3 -m harness …`) parses against the real command line — an unknown
command or option fails — with the files it names present. The README's links and anchors resolve,
its test command is `.ci/run`'s, and it stays short.

A block is marked by an HTML comment on the line(s) just above its fence:

- `<!-- file: PATH -->`: the block is the file PATH (relative to the repository's top); commands of
  the same page may name it;
- `<!-- fragment: scenario -->`: a part of a scenario, completed with what every scenario needs (a
  name, a length, a topic, the Kafka line its protocol runs on) and validated;
- `<!-- fragment -->`: a part of something, not validated on its own;
- `<!-- output: NAME -->`: a command's real output, generated (tests/unit/test_docs_reference.py);
- `<!-- validated-by: TEST -->`: validated by that test module (it needs what this one has not);
- `<!-- recorded: DATE, WHY -->`: a transcript of a real run too long to render in a test: its
  `$ ` commands are parsed all the same.

A run directory a command names (`runs/…`) is one an earlier command made: the sandbox has it.

An unmarked ```yaml block must be a whole scenario, suite or sweep.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^(?P<marks>(?:<!--[^\n]*-->\n)*)```(?P<lang>[\w-]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
MARK = re.compile(r"<!--\s*(?P<kind>file|fragment|output|recorded|validated-by)\s*(?::\s*(?P<value>[^>]*?))?\s*-->")
COMMAND_LANGS = ("sh", "console", "shell", "bash")
# Directories a sandbox gets as real directories, so a page's own files can be written beside the shipped ones.
SANDBOX_DIRS = ("scenarios", "suites", "profiles", "bugs")
OUTPUT_OPTIONS = {"--out", "--junit", "--runs-dir", "-o", "--output", "--cache", "--workdir"}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    marks: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in BLOCK.finditer(text):
        marks = {k.group("kind"): (k.group("value") or "").strip() for k in MARK.finditer(m.group("marks"))}
        line = text.count("\n", 0, m.start("lang"))
        found.append(Block(page, line + 1, m.group("lang"), m.group("body"), marks))
    return found


ALL = [b for p in PAGES for b in blocks(p)]
YAML_BLOCKS = [b for b in ALL if b.lang in ("yaml", "yml")]
COMMAND_BLOCKS = [b for b in ALL if b.lang in COMMAND_LANGS and "output" not in b.marks]


def kind_of(data: object) -> str | None:
    if not isinstance(data, dict):
        return None
    if "scenarios" in data:
        return "suite"
    if "sweep" in data and "base" in data:
        return "sweep"
    if "duration_s" in data and "topics" in data:
        return "scenario"
    return None


def sandbox(tmp_path: Path, page: Path) -> Path:
    """A copy of the repository's top made of links, with the page's own files written into it."""
    top = tmp_path / "repo"
    top.mkdir()
    for entry in REPO.iterdir():
        if entry.name in SANDBOX_DIRS:
            (top / entry.name).mkdir()
            for inner in entry.iterdir():
                (top / entry.name / inner.name).symlink_to(inner)
        elif not entry.name.startswith(".") and entry.name != "runs":  # runs/: the sandbox's own
            (top / entry.name).symlink_to(entry)
    (top / "runs" / "latest").mkdir(parents=True)  # what `runs/latest` is after any run
    for b in blocks(page):
        if "file" in b.marks:
            target = top / b.marks["file"]
            assert not target.is_symlink(), f"{b.where}: {b.marks['file']} would replace a shipped file"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.body)
    return top


def _fragment_scenario(data: dict) -> dict:
    from harness.components import versions
    from oracle.protocols import GENERATIONS

    protocol = (data.get("workload") or {}).get("protocol", "classic-eager")
    cluster = {"kafka": versions.release_meeting(GENERATIONS[protocol].needs) or "3.9", **(data.get("cluster") or {})}
    return {
        "name": "example",
        "duration_s": 300,
        "topics": [{"name": "events", "partitions": 6}],
        **data,
        "cluster": cluster,
    }


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=[b.where for b in YAML_BLOCKS])
def test_each_yaml_example_validates(block: Block, tmp_path, monkeypatch):
    from harness.campaigns.capacity import load_sweep
    from harness.campaigns.suite import load_suite
    from harness.scenario import load_scenario

    if "fragment" in block.marks and block.marks["fragment"] == "":
        return
    if "validated-by" in block.marks:
        test = REPO / block.marks["validated-by"]
        assert test.is_file(), f"{block.where}: validated-by names no file"
        assert block.page.name in test.read_text(), f"{block.where}: {test.name} does not read {block.page.name}"
        return
    for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", block.body):
        monkeypatch.setenv(name, "example-value")
    data = yaml.safe_load(block.body)
    top = sandbox(tmp_path, block.page)
    if block.marks.get("fragment") == "scenario":
        assert isinstance(data, dict) and kind_of(data) is None, f"{block.where}: a whole scenario marked a fragment"
        data = _fragment_scenario(data)
        kind, path = "scenario", top / "fragment.yaml"
        path.write_text(yaml.safe_dump(data))
    else:
        kind = kind_of(data)
        assert kind, (
            f"{block.where}: neither a scenario, a suite nor a sweep: mark it <!-- fragment: scenario --> "
            "or <!-- fragment --> (tests/unit/test_docs_examples.py)"
        )
        default = {"scenario": "example.yaml", "suite": "suites/example.yaml", "sweep": "profiles/example.yaml"}
        path = top / block.marks.get("file", default[kind])
        if not path.exists():
            path.write_text(block.body)
    monkeypatch.chdir(top)
    {"scenario": load_scenario, "suite": load_suite, "sweep": load_sweep}[kind](path)


def commands(block: Block) -> list[list[str]]:
    """The lab's command lines in a block: `rebalance-lab ARGS` or `python3 -m harness ARGS`, as args."""
    found = []
    text = re.sub(r"\\\n\s*", " ", block.body)  # continuation lines
    for line in text.splitlines():
        line = line.strip()
        if block.lang == "console":
            if not line.startswith("$ "):
                continue  # output
            line = line[2:]
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError as e:
                pytest.fail(f"{block.where}: {part!r}: {e}")
            words = _without_redirections(words)
            if words[:1] == ["rebalance-lab"]:
                found.append(words[1:])
            elif words[:3] == ["python3", "-m", "harness"]:
                found.append(words[3:])
    return found


def _without_redirections(words: list[str]) -> list[str]:
    """The words a command gets: the shell's redirections (`> out.json`, `2>&1`) are not its."""
    kept, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif re.fullmatch(r"\d?(>>?|<)(&\d)?", word) or word == "&>":
            skip = not word.endswith(("&1", "&2"))
        elif re.match(r"^\d?(>>?|<)", word):
            continue
        else:
            kept.append(word)
    return kept


def _parse(args: list[str]) -> list[click.Context]:
    """Each context the real command line makes of args (the group's, then each command's)."""
    from harness.cli import main

    contexts = [main.make_context("rebalance-lab", list(args), resilient_parsing=False)]
    while isinstance(contexts[-1].command, click.Group):
        ctx = contexts[-1]
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            break
        name, command, remaining = ctx.command.resolve_command(ctx, rest)
        contexts.append(command.make_context(name, remaining, parent=ctx, resilient_parsing=False))
    return contexts


def _named_files(contexts: list[click.Context]) -> list[str]:
    """The paths a command's arguments name (its inputs; output options are its to create)."""
    named = []
    for ctx in contexts[1:]:
        for param in ctx.command.params:
            if not isinstance(param, click.Argument) or not isinstance(param.type, click.Path):
                continue
            value = ctx.params.get(param.name)
            for v in value if isinstance(value, tuple | list) else [value]:
                if v is not None:
                    named.append(str(v))
    return named


@pytest.mark.parametrize("block", COMMAND_BLOCKS, ids=[b.where for b in COMMAND_BLOCKS])
def test_each_command_example_parses_and_names_files_that_exist(block: Block, tmp_path, monkeypatch):
    top = sandbox(tmp_path, block.page)
    monkeypatch.chdir(top)
    for name in re.findall(r"^\s*export ([A-Za-z_][A-Za-z0-9_]*)=", block.body, re.M):
        monkeypatch.setenv(name, "example-value")
    for args in commands(block):
        for run_dir in (a for a in args if a.startswith("runs/") and not glob.has_magic(a)):
            (top / run_dir).mkdir(parents=True, exist_ok=True)
        try:
            contexts = _parse(args)
        except click.exceptions.Exit:  # --help, --version
            continue
        except click.ClickException as e:
            pytest.fail(f"{block.where}: rebalance-lab {shlex.join(args)}: {e.format_message()}")
        for path in _named_files(contexts):
            if glob.has_magic(path):
                assert glob.glob(path) or path.startswith("runs/"), f"{block.where}: {path} matches nothing"
                continue
            assert os.path.exists(path), f"{block.where}: rebalance-lab {shlex.join(args)}: no file {path}"
    for word in re.findall(
        r"(?<![\w./-])((?:scenarios|suites|profiles|bugs|benchmarks|docs|tests)/[\w./-]+)", block.body
    ):
        if not glob.has_magic(word):
            assert (top / word.rstrip(".")).exists(), f"{block.where}: names {word}, which does not exist"


def test_every_page_has_examples_the_tests_see():
    """The tutorials are commands and files: a fence this module does not read would go unchecked."""
    for name in ("release-engineer", "capacity-planner", "researcher"):
        page = REPO / "docs" / "tutorials" / f"{name}.md"
        found = blocks(page)
        assert any(b in COMMAND_BLOCKS and commands(b) for b in found), page
        assert any(b.lang == "yaml" for b in found), page
    unread = [b.where for b in ALL if b.lang == "" and re.search(r"^\s*(\$ )?rebalance-lab ", b.body, re.M)]
    assert not unread, f"commands in a fence with no language (say ```sh): {unread}"


# ---------------------------------------------------------------- the commands page


def _synopses() -> list[tuple[list[str], str]]:
    """docs/commands.md's table: (the command's words, the synopsis after them), one per row."""
    rows = re.findall(r"^\| `rebalance-lab ([^`]*)` \|", (REPO / "docs" / "commands.md").read_text(), re.M)
    found = []
    for row in rows:
        words = row.replace("\\|", "|").split()
        names = []
        for w in words:
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            names.append(w)
        found.append((names, " ".join(words[len(names) :])))
    return found


def test_the_commands_page_has_every_command_with_its_real_options():
    from harness.cli import main

    documented: set[str] = set()
    for names, synopsis in _synopses():
        command, path = main, []
        for name in names:
            if not isinstance(command, click.Group) or name not in command.commands:
                break
            command, path = command.commands[name], [*path, name]
        assert path, f"docs/commands.md: rebalance-lab {' '.join(names)}: no such command"
        documented.add(path[0])
        opts = {o for p in [*command.params, *main.params] for o in (*p.opts, *p.secondary_opts)}
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", synopsis):
            assert option in opts, f"docs/commands.md: rebalance-lab {' '.join(path)} has no option {option}"
    assert set(main.commands) <= documented, f"not on docs/commands.md: {set(main.commands) - documented}"


# ---------------------------------------------------------------- the README


README = (REPO / "README.md").read_text()


def test_the_readme_is_short():
    assert len(README.encode()) <= 10 * 1024, "the README is the first page: what it is, set-up, first steps, links"


def test_the_readmes_test_command_is_what_ci_runs():
    """.ci/run runs the README's second command verbatim (the command that installs, lints and tests),
    but for pip's `-q`."""
    ci = (REPO / ".ci" / "run").read_text().replace("pip install -q -e", "pip install -e")
    readme_commands = [b.body.strip() for b in blocks(REPO / "README.md") if b.lang == "sh"]
    [test_command] = [c for c in readme_commands if "python3 -m pytest" in c]
    assert test_command in ci.splitlines(), ".ci/run must run the README's test command verbatim"
    assert readme_commands[0] == (
        "python3 -m pip install -e . && python3 -m harness setup && python3 -m harness run scenarios/smoke.yaml"
    )


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs both make it (for the headings these pages have)."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", text, re.M)}


@pytest.mark.parametrize("page", ["README.md", "benchmarks/README.md"])
def test_the_readmes_links_and_anchors_resolve(page):
    """The pages outside docs/ (the site's build checks those inside)."""
    source = REPO / page
    text = re.sub(r"^```.*?^```", "", source.read_text(), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (source.parent / path).resolve() if path else source
        assert linked.exists(), f"{page} links to {target}: no such file"
        if anchor:
            assert anchor in anchors(linked), f"{page} links to {target}: {linked.name} has no such heading"


def test_the_slug_is_the_anchor_the_pages_link_to():
    assert (
        _slug("Kafka releases (`cluster.kafka`, `cluster.metadata`)") == "kafka-releases-clusterkafka-clustermetadata"
    )
    assert _slug("4. Replay a failure and read the verdict") == "4-replay-a-failure-and-read-the-verdict"
