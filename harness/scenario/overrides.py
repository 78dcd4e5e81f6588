"""`rebalance-lab run`'s overrides, and the command that replays a variant.

    rebalance-lab run scenarios/smoke.yaml --seed 2 --protocol classic-cooperative --kafka 4.1 \\
        --client confluent-kafka==2.3.0 --set workload.consumers=4 --set 'faults[1].at_s=12'

The axes (``--seed``, ``--protocol``, ``--kafka``, ``--client``, ``--backend``) are a suite's
and compare's (harness.scenario.variants): applied by the same code, they give the same
scenario, named as a suite names its variant (``smoke-classic-cooperative-kafka4.1``). Then each
``--set key.path=value`` in turn: the value read as YAML (``4``, ``true``, ``"4.1"``, ``[a, b]``,
``{rate: 200}``; ``null`` removes the key, so its default applies), the key path as errors show
it (``faults[1].at_s``: one-based list indices; a key holding dots in double quotes:
``cluster.broker_config."group.initial.rebalance.delay.ms"``). All of it on the file's data
before validation: a bad value is reported as the file's problems are, naming ``--set key.path``
(or the axis option) instead of the key.

``replay_command`` is the other way round: the `run` command line that gives a suite variant's
scenario (suite.json's ``replay``, its JUnit testcase's property and console line).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.scenario.errors import Part, key_parts
from harness.scenario.variants import Axes, Impossible, variant
from runtime.errors import ScenarioError

SET = "--set"
# axis -> (the option that sets it, the scenario key it sets)
AXIS_OPTIONS = {
    "seed": ("--seed", ("seed",)),
    "protocol": ("--protocol", ("workload", "protocol")),
    "kafka": ("--kafka", ("cluster", "kafka")),
    "client": ("--client", ("workload", "client")),
    "backend": ("--backend", ("cluster", "backend")),
}


class OverrideError(ValueError):
    """A ``--set`` the command line cannot take (no ``=``, not a key path, a value that is no YAML)."""


def parse_set(text: str) -> tuple[str, Any]:
    """``key.path=value`` as (the key path as written, the value read as YAML)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise OverrideError(f"{text!r}: KEY.PATH=VALUE, e.g. workload.consumers=4")
    if key_parts(key, dotted_indices=False) is None:
        raise OverrideError(
            f"{key!r}: not a key path (keys joined by dots, list entries as [1], [2], …; a key with dots "
            'in double quotes: cluster.broker_config."group.initial.rebalance.delay.ms")'
        )
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise OverrideError(f"{key}: {raw!r} is not a YAML value ({getattr(e, 'problem', None) or e})") from None
    return key, value


@dataclass(frozen=True)
class Overrides:
    """What `run`'s options change of the file: a variant's axes, then each ``--set`` in order."""

    axes: Axes = Axes()
    sets: tuple[tuple[str, Any], ...] = ()  # (key path as written, value)

    def __bool__(self) -> bool:
        return self.axes != Axes() or bool(self.sets)

    def apply(self, data: dict, path: str | Path) -> dict:
        """The file's data (read_scenario_data) with the overrides applied; ScenarioError naming the
        option when one cannot be (a generation on a Kafka line it does not exist on, a key path
        through a value that is no mapping or list)."""
        if self.axes != Axes() and all(isinstance(data.get(k, {}), dict) for k in ("workload", "cluster")):
            try:
                data, _ = variant(data, self.axes)  # the checks the protocol drops go, as a suite's
            except Impossible as e:
                raise ScenarioError(path, [("--protocol/--kafka", str(e))]) from None
            if isinstance(data.get("name"), str):
                data["name"] = self.axes.run_name(data["name"])  # as a suite names its variant
        for key, value in self.sets:
            problem = _set(data, key_parts(key, dotted_indices=False) or (), value)
            if problem:
                raise ScenarioError(path, [(f"{SET} {key}", problem)])
        return data

    def name_options(self, error: ScenarioError) -> ScenarioError:
        """The file's problems, those about a key an option set named by the option: ``--set
        workload.consumers`` (or ``--kafka``) rather than ``workload.consumers``."""
        given = [
            (key_parts(k, dotted_indices=False) or (), f"{SET} {k}") for k, _ in reversed(self.sets)
        ]  # the last --set wins
        given += [(key, option) for axis, (option, key) in AXIS_OPTIONS.items() if getattr(self.axes, axis) is not None]
        problems, renamed = [], False
        for key, reason in error.problems:
            parts = key_parts(key.split(" ")[0], dotted_indices=True) or ()
            option = next((o for p, o in given if p and parts[: len(p)] == p), None)
            if option is None:
                problems.append((key, reason))
                continue
            renamed = True
            deeper = next(len(p) for p, o in given if o == option) < len(parts)
            problems.append((f"{option} ({_shown(parts)})" if deeper else option, reason))
        return ScenarioError(error.path, problems) if renamed else error


def _shown(parts: tuple[Part, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p + 1}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _set(data: dict, parts: tuple[Part, ...], value: Any) -> str | None:
    """Sets ``value`` at ``parts`` in place (``None`` removes the key); why it cannot be, or None. A
    mapping missing on the way is made."""
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = _shown(parts[:i]) or "the top level"
        if isinstance(part, int):
            if not isinstance(node, list):
                return f"{where} is not a list: [{part + 1}] indexes nothing"
            if part >= len(node):
                return f"{where} has {len(node)} entries: there is no [{part + 1}]"
        elif not isinstance(node, dict):
            return f"{where} is {_kind(node)}, not a mapping: it has no key {part!r}"
        if last:
            if value is None:
                if isinstance(part, int):
                    node.pop(part)
                else:
                    node.pop(part, None)
            else:
                node[part] = value
            return None
        if isinstance(part, str) and part not in node:
            node[part] = {}
        node = node[part]
    return None


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a value ({json.dumps(value, default=str)[:40]})"


def replay_command(scenario_file: str | Path, seed: int, axes: Axes, sets: list[tuple[str, Any]] | None = None) -> str:
    """The `rebalance-lab run` command line whose scenario is the one of ``scenario_file`` with these
    axes (and sets) applied, shell-quoted: the seed always, the other axes those given."""
    argv = ["rebalance-lab", "run", str(scenario_file), "--seed", str(seed)]
    for axis, (option, _) in AXIS_OPTIONS.items():
        if axis != "seed" and getattr(axes, axis) is not None:
            argv += [option, str(getattr(axes, axis))]
    for key, value in sets or []:  # JSON is YAML's flow style: read back as written
        argv += [SET, f"{key}={json.dumps(value, separators=(', ', ': '))}"]
    return shlex.join(argv)


def display_path(path: str | Path) -> str:
    """A file as a command run from here would name it: relative to the working directory when under
    it, else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def scenario_text(data: dict) -> str:
    """Scenario data as a file the harness writes it (a suite's variant, `run --set …`'s scenario.yaml):
    YAML in the data's key order, no secret value (runtime.secrets)."""
    from harness.scenario.files import redact_scenario_data

    return yaml.safe_dump(redact_scenario_data(data), sort_keys=False)
