"""The docs build as a site in strict mode (mkdocs.yml): a dead link or anchor between pages, a page
left out of the nav, or a link to a repository file that does not exist fails the build."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _build(config_file: Path, site: Path) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(config_file), site_dir=str(site), strict=True))


def test_the_site_builds_in_strict_mode(tmp_path):
    _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "tutorials" / "release-engineer.html").is_file()
    assert not (tmp_path / "site" / ".hooks").exists()  # the hook is no page of the site


@pytest.mark.parametrize(
    "link, says",
    [
        ("[a](no-such-page.md)", "not found among documentation files"),
        ("[a](index.md#no-such-anchor)", "no such anchor"),
        ("[a](../no-such-dir/x.yaml)", "no such file"),
        ("[a](no-such-dir/)", "no such file"),
    ],
)
def test_a_dead_link_fails_the_build(tmp_path, link, says, caplog):
    from mkdocs.exceptions import Abort

    with caplog.at_level(logging.WARNING, logger="mkdocs"), pytest.raises(Abort):
        _build(_site_of(tmp_path, link), tmp_path / "site")
    assert says in caplog.text


def test_links_to_the_repositorys_files_and_directories_build(tmp_path):
    """On GitHub they open the file or the folder; on the site they show its path."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s.yaml").write_text("name: s\n")
    config = _site_of(tmp_path, "[the scenario](../scenarios/s.yaml) and [its folder](sub/)")
    (tmp_path / "docs" / "sub").mkdir()
    (tmp_path / "docs" / "sub" / "x.sh").write_text("true\n")
    _build(config, tmp_path / "site")
    page = (tmp_path / "site" / "index.html").read_text()
    assert "<code>scenarios/s.yaml</code>" in page and "<code>docs/sub</code>" in page


def _site_of(tmp_path: Path, markdown: str) -> Path:
    """A site of one page holding ``markdown``, built with the project's settings and hook."""
    docs = tmp_path / "docs"
    (docs / ".hooks").mkdir(parents=True)
    (docs / ".hooks" / "links.py").write_text((REPO / "docs" / ".hooks" / "links.py").read_text())
    (docs / "index.md").write_text(f"# Home\n\n{markdown}\n")
    config = (REPO / "mkdocs.yml").read_text().split("\nnav:")[0] + "\nnav:\n  - Home: index.md\n"
    (tmp_path / "mkdocs.yml").write_text(config)
    return tmp_path / "mkdocs.yml"


def test_mkdocs_is_pinned_in_the_test_extra():
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(req.startswith("mkdocs==") for req in extra)
