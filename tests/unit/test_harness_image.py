"""`rebalance-lab image build`'s recipe: what the image carries and how it starts, and a tag that
changes with the harness's code (built again) and only with its inputs (found the next time).
The real build and a suite run in it against an external cluster: docs/ci.md, with figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.components.containers import harness_image, images


@pytest.fixture
def recipe_inputs(tmp_path, monkeypatch):
    """A checkout of two files, a wheels directory and one component, in place of this machine's."""
    repo = tmp_path / "repo"
    (repo / "harness").mkdir(parents=True)
    (repo / "harness" / "__init__.py").write_text("")
    (repo / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(images, "REPO", repo)
    monkeypatch.setattr(harness_image, "SOURCES", ("harness", "pyproject.toml"))
    home = tmp_path / "home"
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(home))
    component = home / "components" / "toxiproxy-v2.12.0"
    component.mkdir(parents=True)
    (component / "server").write_bytes(b"\x7fELF")
    monkeypatch.setattr(harness_image, "_component_dirs", lambda _lines: [component])
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("pip-24.3.1-py3-none-any.whl", "kazoo-2.11.0-py2.py3-none-any.whl"):
        (wheels / name).write_bytes(b"PK")
    return repo, wheels


def test_the_image_installs_the_harness_over_the_jre_image_and_runs_it(recipe_inputs):
    repo, wheels = recipe_inputs
    recipe = harness_image.harness_recipe(["3.9"], wheels)
    assert recipe.tag.startswith("rebalance-lab/harness:") and recipe.parent == images.jre_recipe()
    lines = recipe.dockerfile.splitlines()
    assert lines[0] == f"FROM {images.jre_recipe().tag} AS deps"
    assert "python3 /wheels/pip-24.3.1-py3-none-any.whl/pip install" in recipe.dockerfile  # no pip in Debian's image
    assert "--no-index" in recipe.dockerfile  # nothing is downloaded while building
    assert lines[-3:] == [
        f"ENV REBALANCE_LAB_HOME={harness_image.IMAGE_LAB_HOME}",
        "WORKDIR /work",
        'ENTRYPOINT ["rebalance-lab"]',
    ]
    targets = {target for _source, target in recipe.files}
    assert {
        "src/harness/__init__.py",
        "src/pyproject.toml",
        "home/components/toxiproxy-v2.12.0/server",
        "wheels/kazoo-2.11.0-py2.py3-none-any.whl",
    } <= targets


def test_its_tag_changes_with_the_code_and_only_with_it(recipe_inputs):
    repo, wheels = recipe_inputs
    before = harness_image.harness_recipe(["3.9"], wheels).tag
    assert harness_image.harness_recipe(["3.9"], wheels).tag == before
    (repo / "harness" / "__init__.py").write_text("# changed\n")
    assert harness_image.harness_recipe(["3.9"], wheels).tag != before


def test_the_version_tag_is_the_harness_version():
    assert harness_image.version_tag() == f"rebalance-lab/harness:{harness_image.harness_version()}"


def test_image_build_is_a_documented_command():
    result = CliRunner().invoke(main, ["image", "build", "--help"])
    assert result.exit_code == 0 and "rebalance-lab/harness:<version>" in result.output
    assert "docs/ci.md" in Path(harness_image.__file__).read_text()


def test_the_documented_suite_in_the_image_validates_and_names_the_image(tmp_path):
    from harness.campaigns.suite import load_suite

    doc = (Path(images.REPO) / "docs" / "ci.md").read_text()
    image_part = doc[doc.index("## A container image") :]
    scenario, suite = re.findall(r"```yaml\n(.*?)```", image_part, re.S)
    (tmp_path / "ext.yaml").write_text(scenario)
    (tmp_path / "ext-suite.yaml").write_text(suite)
    [variant] = load_suite(tmp_path / "ext-suite.yaml").variants
    assert variant.scenario_data["cluster"]["backend"] == "external"
    assert variant.scenario_data["cluster"]["bootstrap_servers"].startswith("127.0.0.1:")  # the host's, nothing else
    run = f'docker run --rm --network host -v "$PWD:/work" {harness_image.version_tag()} suite ext-suite.yaml'
    assert run in image_part
