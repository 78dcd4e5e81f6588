"""Scenario files: reading them, the client settings they take from elsewhere, what a run keeps.

- ``read_scenario_data``: a file as plain data, UTF-8 YAML within bounds (docs/inputs.md): at
  most 1 MiB (a byte order mark is fine), no YAML tags, at most 20 levels deep and 50,000
  values once aliases are expanded, no key written twice in a mapping; a value YAML cannot
  build is an error at its line. Suite, sweep and bug files are read the same way, each
  told from the others by the keys only it has (``FILE_KINDS``): a suite given to ``run`` is
  named a suite. The node tree is kept (errors.remember_tree): problems get their lines.
- ``load_scenario``: a file validated into a Scenario; ``--client-config`` and ``--backend``
  applied first. Every problem is reported as ``FILE: key (line N): reason`` (a ScenarioError,
  exit code 2), all of them at once.
- Secrets: ``${NAME}`` in ``cluster.client_config`` read from the environment; client settings
  from a properties file; the scenario as a run directory keeps it, no secret value in it.
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path

import yaml
from pydantic import ValidationError

from harness.cluster.backend import started_backends
from harness.scenario.cluster import HARNESS_CLIENT_SETTINGS, TEXT_VALUED_SETTINGS
from harness.scenario.errors import MAX_PROBLEMS, remember_tree, show_parts, validation_problems
from harness.scenario.kinds import FILE_KINDS
from harness.scenario.model import Scenario
from harness.supervision.run_state import RUN_STATE
from runtime.errors import ScenarioError

MAX_SCENARIO_BYTES = 2**20  # a scenario is a page of YAML
MAX_DEPTH = 20  # the deepest scenario key is 5 levels down (workload.librdkafka.test_hooks.*.member)
MAX_VALUES = 50_000  # after aliases are expanded (no alias bomb); a 1000-fault scenario has ~6000


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that a scenario does not accept (a tag, too deep, too large)."""


class _ScenarioLoader(yaml.SafeLoader):
    """PyYAML's safe loader minus what a scenario never needs and PyYAML handles badly: tags
    (``!!int x`` raises a bare ValueError), nesting deep enough to exhaust the stack, aliases that
    expand to millions of values. A value its constructor cannot build (``2020-99-99`` is read as
    a date, a 5000-digit integer) becomes a YAML error at its line."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = self._values = 0
        self._sizes: dict[int, int] = {}  # id(anchored node) -> values under it, aliases expanded

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._count(self._sizes.get(id(self.anchors.get(event.anchor)), 1), event)
            return super().compose_node(parent, index)
        if event.tag is not None:
            tag = event.tag.replace("tag:yaml.org,2002:", "!!")
            raise _Refused(
                None, None, f"YAML tags ({tag}) are not accepted in a scenario: write the plain value", event.start_mark
            )
        if self._depth >= MAX_DEPTH:
            raise _Refused(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        before = self._values
        self._count(1, event)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if event.anchor is not None:
            self._sizes[id(node)] = self._values - before
        return node

    def _count(self, values: int, event) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise _Refused(None, None, f"more than {MAX_VALUES} values (aliases expanded)", event.start_mark)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as e:
            value = node.value if isinstance(node.value, str) else node.tag
            raise yaml.constructor.ConstructorError(  # (Python's advice on its digit limit is not for users)
                None, None, f"cannot read {value[:40]!r}: {str(e).split('; use')[0]}", node.start_mark
            ) from None


def _wrong_kind(data: object, path: Path, kind: str | None) -> tuple[str, str] | None:
    """The problem of a file of another kind than ``kind``: none of its keys, some of another's."""
    if kind not in FILE_KINDS or not isinstance(data, dict):
        return None
    keys = {k for k in data if isinstance(k, str)}
    if keys & set(FILE_KINDS[kind].keys):
        return None
    score, other = max(((len(keys & set(k.keys)), k) for n, k in FILE_KINDS.items() if n != kind), key=lambda x: x[0])
    if not score:
        return None
    folder = path.parent if str(path.parent) != "." else Path(".")
    use = other.command.replace("DIR", str(folder)).replace("FILE", str(path))
    return ("", f"this is {other.name}, not {FILE_KINDS[kind].name}: use `{use}`")


def _directory_problem(path: Path) -> str:
    """Why a directory is not the file asked for; a run directory is named as one."""
    if (path / RUN_STATE).is_file() or (path / "history.jsonl").is_file():
        return (
            f"this is a run directory: `rebalance-lab check {path}` judges it again; "
            f"`rebalance-lab run {path / 'scenario.yaml'}` runs its scenario again"
        )
    return "a directory, not a file"


def _history_line(text: str) -> dict | None:
    """The first line as a JSON object, if it is one (a history's, say, which YAML cannot read whole)."""
    try:
        first = json.loads(text.split("\n", 1)[0])
    except ValueError:
        return None
    return first if isinstance(first, dict) else None


def _duplicates(root: yaml.Node) -> list[tuple[str, str]]:
    """Every key written twice in one mapping, with both lines (YAML would keep the last silently).
    A key a merge (``<<: *base``) brings in may be written again: that is what a merge is for."""
    found, seen, stack = [], set(), [(root, ())]
    while stack:
        node, parts = stack.pop()
        if id(node) in seen:  # an alias: its anchor's mapping was looked at
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack += [(v, (*parts, i)) for i, v in reversed(list(enumerate(node.value)))]
        elif isinstance(node, yaml.MappingNode):
            first: dict = {}
            for k, _ in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    name = (k.tag, k.value)
                    if name in first:
                        where = show_parts((*parts, k.value))
                        found.append(
                            (
                                f"{where} (line {k.start_mark.line + 1})",
                                f"written twice (first at line {first[name].start_mark.line + 1}): "
                                "YAML would keep the last silently; keep one",
                            )
                        )
                    else:
                        first[name] = k
            stack += [(v, (*parts, k.value)) for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode)]
    return sorted(found, key=lambda p: int(p[0].rsplit("line ", 1)[1].rstrip(")")))


_NUMBERS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}  # (`on` read as true is Kafka's true too)


def _changed_settings(root: yaml.Node) -> list[tuple[str, str]]:
    """Settings (TEXT_VALUED_SETTINGS) written unquoted that YAML reads as another value than written:
    Kafka would be given ``3.1`` for ``3.10``."""
    found = []

    def under(node, path, parts):
        if not path:
            for k, v in node.value if isinstance(node, yaml.MappingNode) else ():
                if not (isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)):
                    continue
                if v.style is not None or v.tag not in _NUMBERS:
                    continue
                try:
                    read = yaml.safe_load(v.value)
                except yaml.YAMLError:
                    continue
                if str(read) != v.value:
                    shown = show_parts((*parts, k.value))
                    found.append(
                        (
                            f"{shown} (line {k.start_mark.line + 1})",
                            f"YAML reads {v.value} as the number {read}, "
                            f'which Kafka would be given: write it quoted, {k.value}: "{v.value}"',
                        )
                    )
            return
        step, rest = path[0], path[1:]
        if step == "*" and isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                under(item, rest, (*parts, i))
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == step:
                    under(v, rest, (*parts, step))

    for path in TEXT_VALUED_SETTINGS:
        under(root, path, ())
    return found


def _where(data: bytes, offset: int) -> str:
    line, line_start = data.count(b"\n", 0, offset) + 1, data.rfind(b"\n", 0, offset) + 1
    return f"line {line}, column {offset - line_start + 1}"


def read_scenario_data(path: str | Path, kind: str = "scenario") -> dict:
    """The scenario file (or a suite, sweep or bug file: the ``kind`` of FILE_KINDS it should be) as
    plain data, before validation: UTF-8 YAML within the limits above, of that kind."""
    path = Path(path)
    what = FILE_KINDS[kind].what if kind in FILE_KINDS else kind  # (a sentence: what it should be)
    try:
        if path.is_dir():
            raise ScenarioError(path, [("", _directory_problem(path))])
        if path.exists() and not path.is_file():
            raise ScenarioError(path, [("(file)", "not a regular file")])
        with path.open("rb") as fh:
            data = fh.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise ScenarioError(path, [("(file)", e.strerror or str(e))]) from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(path, [("(file)", f"larger than {MAX_SCENARIO_BYTES >> 20} MiB: not a scenario")])
    data = data.removeprefix(codecs.BOM_UTF8)  # some editors start UTF-8 files with one
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(path, [(_where(data, e.start), f"not UTF-8 text (byte 0x{data[e.start]:02x})")]) from None
    loader = None
    try:  # composed once: the tree locates problems (errors.located), the data is built from it
        loader = _ScenarioLoader(text)
        root = loader.get_single_node()
        if root is not None:
            remember_tree(path, root)
            if duplicates := _duplicates(root):
                raise ScenarioError(path, duplicates)
            if kind == "scenario" and (changed := _changed_settings(root)):
                raise ScenarioError(path, changed)
        parsed = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as e:
        if (wrong := _wrong_kind(_history_line(text), path, kind)) is not None:
            raise ScenarioError(path, [wrong]) from None
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        reason = e.problem if isinstance(e, _Refused) else f"not valid YAML: {e.problem or e}"
        raise ScenarioError(path, [(where, reason)]) from None
    except yaml.YAMLError as e:  # the reader: a control character, say
        where = (
            _where(text.encode(), len(text[: e.position].encode()))
            if isinstance(e, yaml.reader.ReaderError)
            else "(yaml)"
        )
        raise ScenarioError(path, [(where, f"not valid YAML: {getattr(e, 'reason', None) or e}")]) from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(parsed, dict):
        raise ScenarioError(path, [("(top level)", what)])
    if (wrong := _wrong_kind(parsed, path, kind)) is not None:
        raise ScenarioError(path, [wrong])
    return parsed


def resolve_client_config(data: dict, path: str | Path) -> dict:
    """``data`` with the ``${NAME}`` references of its ``cluster.client_config`` string values resolved from
    the environment (each value that used one is a secret from then on: runtime.secrets); a variable
    not set is bad input naming the file, the key and the variable. Done once, on the file's data."""
    from runtime import secrets

    cluster = data.get("cluster")
    if not isinstance(cluster, dict) or not isinstance(cluster.get("client_config"), dict):
        return data
    resolved, problems = secrets.resolve_config(cluster["client_config"])
    if problems:
        raise ScenarioError(path, [(f"cluster.client_config.{key}", reason) for key, reason in problems])
    return {**data, "cluster": {**cluster, "client_config": resolved}}


def client_config_file(path: str | Path) -> dict:
    """``--client-config FILE``: client settings in Java properties format (as Kafka's own tools take
    them), ``${NAME}`` resolved from the environment; bad input names the file, the line and the key."""
    from runtime import secrets

    settings, problems = secrets.read_properties(path)
    for key, value in settings.items():
        if key in HARNESS_CLIENT_SETTINGS:
            problems.append((key, "the harness sets this for each client"))
        if re.search(r"[\r\n\x00]", value):
            problems.append((key, "a value is one line (no line breaks)"))
    if problems:
        raise ScenarioError(path, problems)
    return settings


def load_scenario(path: str | Path, client_config: str | Path | None = None, backend: str | None = None) -> Scenario:
    """The scenario file, validated. ``client_config``: a properties file of client settings merged over
    ``cluster.client_config`` (`--client-config`); ``backend``: the cluster backend it runs on (`--backend`)."""
    return load_scenario_data(read_scenario_data(path), path, client_config, backend)


def redact_scenario_data(data: dict) -> dict:
    """Scenario data as a file the harness writes may hold it: secret settings of
    ``cluster.client_config`` written as values become ``***`` (``${NAME}`` references stay)."""
    from runtime import secrets

    cluster = data.get("cluster")
    if not isinstance(cluster, dict) or not isinstance(cluster.get("client_config"), dict):
        return data
    config = {
        k: secrets.MASK
        if isinstance(k, str) and secrets.is_secret(k, v) and secrets.ENV_REF.sub("", str(v)).strip()
        else v
        for k, v in cluster["client_config"].items()
    }
    return {**data, "cluster": {**cluster, "client_config": config}}


def load_scenario_data(
    data: dict, path: str | Path, client_config: str | Path | None = None, backend: str | None = None
) -> Scenario:
    """As load_scenario, from the file's data (read_scenario_data); problems are ``path``'s."""
    data = resolve_client_config(data, path)
    if backend or client_config is not None:
        cluster = dict(data.get("cluster") or {}) if isinstance(data.get("cluster", {}), dict) else data.get("cluster")
        if isinstance(cluster, dict):
            if backend:
                cluster["backend"] = backend
            if client_config is not None:
                extra = client_config_file(client_config)
                if cluster.get("backend", "local") in started_backends():
                    raise ScenarioError(
                        client_config,
                        [
                            (
                                "(file)",
                                f"client settings are for a cluster the harness does "
                                f"not run (backend: external); {path} runs its own",
                            )
                        ],
                    )
                base = cluster.get("client_config") if isinstance(cluster.get("client_config"), dict) else {}
                cluster["client_config"] = {**base, **extra}
            data = {**data, "cluster": cluster}
    return scenario_from_data(data, path)


def scenario_from_data(data: dict, path: str | Path) -> Scenario:
    """A scenario from its (resolved) data; problems are reported as ``path``'s."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        problems = validation_problems(e)
        if len(problems) > MAX_PROBLEMS:
            problems = problems[:MAX_PROBLEMS] + [("…", f"{len(problems) - MAX_PROBLEMS} more problems")]
        raise ScenarioError(path, problems) from None


def redacted_scenario_text(path: str | Path) -> str:
    """The scenario file as written, but with no secret value: each secret setting of
    ``cluster.client_config`` written as a value (not only ``${NAME}`` references) becomes ``"***"``
    in place — comments, layout and every other byte stay — and any secret value the harness knows
    (runtime.secrets) is masked wherever else it appears. What a run directory keeps as scenario.yaml."""
    from runtime import secrets

    text = Path(path).read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8")
    spans = []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        root = None
    cluster = _mapping_value(root, "cluster")
    config = _mapping_value(cluster, "client_config")
    for key, value in config.value if isinstance(config, yaml.MappingNode) else []:
        if (
            isinstance(key, yaml.ScalarNode)
            and isinstance(value, yaml.ScalarNode)
            and secrets.is_secret(str(key.value), value.value)
            and secrets.ENV_REF.sub("", str(value.value)).strip()
        ):  # only ${NAME} references: kept
            spans.append((value.start_mark.index, value.end_mark.index))
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + f'"{secrets.MASK}"' + text[end:]
    return secrets.redact_text(text)


def _mapping_value(node, key: str):
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
