"""Extensions from outside the tree: fault kinds, checks and drivers that an installed
distribution registers through entry points — the way pytest finds its plugins — so a fault
kind, check or driver of one's own needs no fork (docs/extending.md).

    [project.entry-points."rebalance_lab.checks"]
    toy-commits = "toy_extension.check"

Each group's registry (``GROUPS``) owns what its entry points name and loads them, once, on
first use: faults/catalogue.py the fault kinds, oracle/checks the checks, oracle/protocols.py
the drivers. Finding the plugins reads the installed distributions' metadata and imports
none of them; it too happens once, on first use, never on importing the oracle (every process
of a run imports oracle.vocabulary, and few need a plugin).

What a plugin may not do is said as an ``ExtensionError`` naming its distribution and entry
point: fail to import, claim a name another plugin or the lab itself has, or be something
other than its group's kind of object. The harness reports it as bad input (exit code 2).

Imports nothing of the project: the oracle is the bottom layer, and its checks are plugins too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass

FAULT_KINDS = "rebalance_lab.fault_kinds"  # -> a faults.base.Fault subclass (faults/catalogue.py)
CHECKS = "rebalance_lab.checks"  # -> a check: NAME, OPTIONS, check(history, options) (oracle/checks)
DRIVERS = "rebalance_lab.drivers"  # -> a member driver class, with runs(generation) (oracle/protocols.py)
GROUPS = {FAULT_KINDS: "fault kind", CHECKS: "check", DRIVERS: "driver"}  # group -> what one entry point names


class ExtensionError(Exception):
    """A plugin the lab cannot use: which distribution and entry point, and why."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of an installed distribution in one of the lab's groups."""

    group: str
    name: str  # the fault kind, check or driver name it registers
    value: str  # what it points to: "module" or "module:attribute"
    distribution: str
    version: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def to_dict(self) -> dict[str, str]:
        """As run.json and run_started record it."""
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.distribution} {self.version} (entry point {self.group}: {self.name} = {self.value})"


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()  # PEP 503: what pip and importlib.metadata compare


def discover(path: list[str] | None = None) -> tuple[Plugin, ...]:
    """Every entry point in the lab's groups of the distributions on ``path`` (default: sys.path),
    by group and name. A distribution found twice on the path counts once, the first, as
    importlib.metadata's own ``entry_points()`` has it."""
    import importlib.metadata  # here, not above: ~15 ms that a process importing the oracle seldom needs

    found, seen = [], set()
    for dist in importlib.metadata.distributions(**({"path": path} if path is not None else {})):
        name = dist.metadata["Name"] or "an unnamed distribution"
        if _normalized(name) in seen:
            continue
        seen.add(_normalized(name))
        found += [
            Plugin(ep.group, ep.name, ep.value, name, dist.version or "(no version)")
            for ep in dist.entry_points
            if ep.group in GROUPS
        ]
    return tuple(sorted(found, key=lambda p: (p.group, p.name, _normalized(p.distribution))))


@functools.cache
def installed() -> tuple[Plugin, ...]:
    """The plugins of this Python environment, found once per process."""
    return discover()


def recorded() -> list[dict[str, str]]:
    """The plugins as a run records them (run.json, run_started): every one installed — the
    registries load each, or the run does not start."""
    return [p.to_dict() for p in installed()]


def load(
    group: str,
    built_in: Collection[str],
    accept: Callable[[object, Plugin], str | None],
    plugins: Collection[Plugin] | None = None,
) -> dict[str, object]:
    """Name -> the object each plugin of ``group`` points to, imported; its registry calls this
    once. ``accept`` says why an object is not one of the group's (None: it is). ``plugins``:
    those to load (default: the installed ones of ``group``)."""
    what = GROUPS[group]
    plugins = [p for p in (installed() if plugins is None else plugins) if p.group == group]
    by_name: dict[str, list[Plugin]] = {}
    for p in plugins:
        by_name.setdefault(p.name, []).append(p)
    for name, claims in by_name.items():  # before anything is imported: the clash is the news
        if name in built_in:
            raise ExtensionError(
                f"{what} {name!r} is built in to rebalance-lab, and a plugin claims it too: "
                f"{claims[0]}; a plugin's {what} needs a name of its own"
            )
        if len(claims) > 1:
            raise ExtensionError(
                f"{what} {name!r} is claimed by {len(claims)} plugins: "
                f"{' and '.join(map(str, claims))}; uninstall one, or rename its entry point"
            )
    import importlib.metadata

    loaded = {}
    for p in plugins:
        try:
            obj = importlib.metadata.EntryPoint(p.name, p.value, p.group).load()
        except Exception as e:  # whatever its import raised: said as the plugin's, never as a traceback of ours
            raise ExtensionError(f"plugin {p}: failed to load: {type(e).__name__}: {e}") from None
        if reason := accept(obj, p):
            raise ExtensionError(f"plugin {p}: not a {what}: {reason}")
        loaded[p.name] = obj
    return loaded


def not_installed(group: str, name: str, recorded_plugins: object) -> str | None:
    """Why ``name`` is unknown here, if a run recorded it as a plugin's (run_started's
    ``plugins``): which distribution it came from. None if the run did not record it so."""
    for p in recorded_plugins if isinstance(recorded_plugins, list) else ():
        if isinstance(p, dict) and p.get("group") == group and p.get("name") == name:
            return (
                f"{GROUPS[group]} {name!r} comes from a plugin not installed here: {p.get('distribution')} "
                f"{p.get('version')} (entry point {group}: {name} = {p.get('value')}); install it to judge this history"
            )
    return None
