"""docs/extending.md runs as written: each example is a file of the repository (its first line
names the file, the rest is in it word for word), its commands run in the toy extension as
shown, and each failure it lists is the message a test sees the command say."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from oracle.extensions import discover
from tests.unit.test_toy_extension import TOY, UNUSABLE, lab, not_installed

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "extending.md").read_text()
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", DOC, flags=re.M | re.S)


def test_every_example_is_a_file_of_the_repository():
    examples = [body for lang, body in BLOCKS if lang != "sh"]
    assert len(examples) >= 8, "docs/extending.md's examples were not found"
    for body in examples:
        first, _, excerpt = body.partition("\n")
        assert first.startswith("# "), f"an example names its file on its first line: {first!r}"
        source = (REPO / first.removeprefix("# ")).read_text()
        assert excerpt in source, f"docs/extending.md's example is not in {first[2:]} word for word:\n{excerpt}"


def test_its_commands_run_in_the_toy_extension():
    [commands] = [body for lang, body in BLOCKS if lang == "sh"]
    for line in commands.splitlines():
        command, *args = shlex.split(line)
        assert command == "rebalance-lab", line
        if args[0] == "run":  # a real cluster's: tests/integration/test_toy_extension.py runs this very file
            integration = (REPO / "tests" / "integration" / "test_toy_extension.py").read_text()
            assert args == ["run", "toy.yaml"] and '"run", "toy.yaml"' in integration and "cwd=TOY" in integration
            continue
        result = lab(*args, cwd=TOY)
        assert result.returncode == 0, f"{line}: {result.stderr}"


def test_the_distribution_is_what_its_pyproject_declares():
    """The toy's `*.dist-info` is what `pip install` makes of its pyproject.toml (no build here)."""
    project = tomllib.loads((TOY / "pyproject.toml").read_text())["project"]
    found = discover([str(TOY)])
    assert {(p.group, p.name, p.value) for p in found} == {
        (group, name, value) for group, eps in project["entry-points"].items() for name, value in eps.items()
    }
    assert {(p.distribution, p.version) for p in found} == {(project["name"], project["version"])}


def test_each_failure_listed_is_what_a_command_says(tmp_path):
    section = DOC[DOC.index("A plugin that cannot be used") : DOC.index("## A fault kind")]
    templates = re.findall(r"^\| [^|]+ \| `(.+)` \|$", section, flags=re.M)
    said = [message.removeprefix("error: ") for _, message in UNUSABLE.values()]
    said.append(not_installed(tmp_path / "run").removeprefix("error: "))
    assert len(templates) == 5
    for template in templates:  # <placeholders> stand for any text
        pattern = "".join(
            ".+?" if part.startswith("<") else re.escape(part) for part in re.split(r"(<[^>]+>)", template)
        )
        assert any(re.fullmatch(pattern, message) for message in said), f"no command says {template}"
