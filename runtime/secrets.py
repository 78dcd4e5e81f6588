"""Secrets: which client settings are secret, how their values reach the clients, and redaction.

A client setting is secret when its key matches ``*password*``, ``*secret*``, ``sasl.jaas.config``
or ``ssl.key*`` (case-insensitive), or when its value came from a ``${NAME}`` reference to the
environment (a scenario's ``cluster.client_config``, a ``--client-config`` properties file).
Every secret value the harness has seen is kept in this process's registry (``register``);
whatever the harness writes — the run directory's scenario copy, spec files, run.json, the
history, reports, JUnit, the console — goes through ``redact``/``redact_text``, which put
``***`` in its place.

The values themselves reach the client processes through their environment only: the spec
file a client reads (``workload/<name>-<n>.json``) carries ``***`` where a secret was, and the
environment variable ``REBALANCE_LAB_CLIENT_SECRETS`` (a JSON object, key -> value) carries the
values; ``child_settings`` merges them back in the child (which registers them too, so its own
history lines are redacted as well). No file the harness leaves behind holds one.

Free text is redacted by value (``redact_text``): a value shorter than ``MIN_TEXT_SECRET``
characters is masked wherever it is a setting's value, but not searched for in free text (a
``${ENV}`` value "1" would otherwise blank every digit 1 of a report).
"""

from __future__ import annotations

import json
import os
import re
from fnmatch import fnmatchcase
from pathlib import Path

MASK = "***"
SECRET_ENV = "REBALANCE_LAB_CLIENT_SECRETS"  # the child's channel: {key: value} of its secret settings
SECRET_KEY_PATTERNS = ("*password*", "*secret*", "sasl.jaas.config", "ssl.key*")
MIN_TEXT_SECRET = 4
MAX_PROPERTIES_BYTES = 2**20

_values: set[str] = set()  # every secret value seen by this process


def is_secret_key(key: str) -> bool:
    k = key.lower()
    return any(fnmatchcase(k, p) for p in SECRET_KEY_PATTERNS)


def register(value) -> None:
    """Remember ``value`` as secret: redact_text masks it from now on."""
    if isinstance(value, str) and value:
        _values.add(value)


def registered() -> frozenset[str]:
    return frozenset(_values)


def forget_all() -> None:
    """Tests only: an empty registry."""
    _values.clear()


def is_secret(key: str, value) -> bool:
    return is_secret_key(key) or (isinstance(value, str) and value in _values)


def redact_text(text: str) -> str:
    """``text`` with every registered secret value (of MIN_TEXT_SECRET characters or more) as ``***``."""
    if not _values or not isinstance(text, str):
        return text
    for value in sorted(_values, key=len, reverse=True):  # a longer one first: it may contain a shorter one
        if len(value) >= MIN_TEXT_SECRET and value in text:
            text = text.replace(value, MASK)
    return text


def redact(obj):
    """A JSON-like value with secret settings masked by key and registered values masked in every string."""
    if isinstance(obj, dict):
        return {
            k: MASK if isinstance(k, str) and is_secret(k, v) and not isinstance(v, (dict, list)) else redact(v)
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def split_client_config(config: dict) -> tuple[dict, dict]:
    """(what a spec file may hold: secrets as ``***``, the secrets themselves: key -> value)."""
    public, secret = {}, {}
    for key, value in config.items():
        if is_secret(key, value):
            public[key], secret[key] = MASK, value
        else:
            public[key] = value
    return public, secret


def child_env(config: dict) -> dict:
    """The environment a client process gets for ``config``'s secret settings (empty: none)."""
    _, secret = split_client_config(config)
    return {SECRET_ENV: json.dumps(secret)} if secret else {}


def child_settings(public: dict) -> dict:
    """In a client process: its spec's ``client_settings`` with the secret values from its environment."""
    try:
        secret = json.loads(os.environ.get(SECRET_ENV) or "{}")
    except ValueError:
        secret = {}
    if not isinstance(secret, dict):
        secret = {}
    for value in secret.values():
        register(value)
    return {**public, **{k: v for k, v in secret.items() if k in public}}


# ----------------------------------------------------------------------------- ${NAME} references

ENV_REF = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\})")  # ${NAME}; $$ is a literal $


def resolve_env(value: str, environ=None) -> tuple[str, list[str], bool]:
    """(``value`` with each ``${NAME}`` replaced from the environment, the names not set, whether any was used)."""
    environ = os.environ if environ is None else environ
    missing: list[str] = []
    used = False

    def sub(m: re.Match) -> str:
        nonlocal used
        if m.group(1) is None:
            return "$"
        used = True
        if m.group(1) not in environ:
            missing.append(m.group(1))
            return m.group(0)
        return environ[m.group(1)]

    return ENV_REF.sub(sub, value), missing, used


def resolve_config(config: dict, environ=None) -> tuple[dict, list[tuple[str, str]]]:
    """A client config with its ``${NAME}`` references resolved (each value that used one registered
    as secret), and the problems: (key, reason) for each variable not set."""
    out, problems = {}, []
    for key, value in config.items():
        if isinstance(value, str):
            value, missing, used = resolve_env(value, environ)
            problems += [(key, f"${{{name}}} is not set in the environment") for name in missing]
            if used:
                register(value)
        if isinstance(key, str) and is_secret_key(key):
            register(value)
        out[key] = value
    return out, problems


# ----------------------------------------------------------------------------- properties files

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _logical_lines(text: str):
    """(first physical line number, logical line) as java.util.Properties.load reads them."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, line = i + 1, lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):  # an odd number of trailing \
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
        yield start, line


def parse_properties(text: str) -> list[tuple[int, str, str]]:
    """(line, key, value) of a Java properties text: ``key=value``, ``key: value`` or ``key value``;
    ``#`` and ``!`` comments; a trailing backslash continues a line; ``\\t``, ``\\n``, ``\\uXXXX`` escapes."""
    out = []
    for number, line in _logical_lines(text):
        m = re.match(r"((?:\\.|[^=:\s\\])*)[ \t\f]*(?:[=:][ \t\f]*)?(.*)$", line, re.S)
        out.append((number, _unescape(m.group(1)), _unescape(m.group(2))))
    return out


def read_properties(path: str | Path, environ=None) -> tuple[dict, list[tuple[str, str]]]:
    """A ``--client-config`` file: its settings, ``${NAME}`` resolved and registered, and its problems
    as (where, reason): ``line 3: sasl.password`` and why. Raises OSError-free: unreadable is a problem."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            return {}, [("(file)", "not a regular file")]
        with path.open("rb") as fh:
            data = fh.read(MAX_PROPERTIES_BYTES + 1)
    except OSError as e:
        return {}, [("(file)", e.strerror or str(e))]
    if len(data) > MAX_PROPERTIES_BYTES:
        return {}, [("(file)", "larger than 1 MiB: not a client config")]
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        return {}, [("(file)", f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})")]
    settings: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for number, key, value in parse_properties(text):
        where = f"line {number}: {key}"
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,255}", key):
            problems.append((f"line {number}", f"{key!r} is not a Kafka config name"))
            continue
        resolved, missing, used = resolve_env(value, environ)
        problems += [(where, f"${{{name}}} is not set in the environment") for name in missing]
        if used or is_secret_key(key):
            register(resolved)
        settings[key] = resolved  # the last one of a key counts, as in Java
    return settings, problems
