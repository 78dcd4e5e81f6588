"""mkdocs hook: links from docs/ to the repository's other files (scenarios/, suites/, benchmarks/ …).

On GitHub or GitLab a relative link such as `../scenarios/smoke.yaml` (or a directory, `ci/`)
opens the file; the site has no such page. This hook checks each such link names a file that exists — a warning
otherwise, which `mkdocs build --strict` turns into a failed build — and shows it on the site
as a link into the repository (`repo_url` in mkdocs.yml) or, without one, as the path in code.
Links between pages of docs/ are mkdocs's own to check (`validation:` in mkdocs.yml)."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.plugins import get_plugin_logger

log = get_plugin_logger("rebalance-lab-links")

LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")
FENCE = re.compile(r"^(```|~~~)")


def repo_target(page_src: str, target: str, docs_dir: Path) -> Path | None:
    """The repository file a relative link from ``page_src`` names, when the site has no page for it:
    a file outside docs/, or a directory (docs/ci/ holds files, no page)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None
    path = Path(posixpath.normpath(posixpath.join(posixpath.dirname(page_src), target)))
    if path.parts and path.parts[0] == "..":
        return (docs_dir / path).resolve()
    if target.endswith("/") or (docs_dir / path).is_dir():
        return (docs_dir / path).resolve()
    return None


def on_page_markdown(markdown: str, page, config, files):
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = docs_dir.parent
    repo_url = (config.get("repo_url") or "").rstrip("/")
    out, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        if not fenced:

            def rewrite(m: re.Match) -> str:
                target = repo_target(page.file.src_uri, m.group("target"), docs_dir)
                if target is None:
                    return m.group(0)
                try:
                    relative = target.relative_to(repo).as_posix()
                except ValueError:
                    log.warning(f"{page.file.src_uri}: link to {m.group('target')}: outside the repository")
                    return m.group(0)
                if not target.exists():
                    log.warning(f"{page.file.src_uri}: link to {m.group('target')}: no such file {relative}")
                    return m.group(0)
                if repo_url:
                    return f"[{m.group('text')}]({repo_url}/{'tree' if target.is_dir() else 'blob'}/main/{relative})"
                text = m.group("text")
                return text if text.strip("`") == relative else f"{text} (`{relative}`)"

            line = LINK.sub(rewrite, line)
        out.append(line)
    return "\n".join(out)
