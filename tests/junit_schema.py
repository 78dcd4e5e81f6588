"""The JUnit schema CI systems read (Surefire / Jenkins' junit-10.xsd), for validating what
`suite` and the pytest plugin write. pytest validates its own --junitxml output against the
same file and ships it in its sdist: fetched from PyPI once (pinned), kept in the lab's cache."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from harness.paths import lab_home

PYTEST_SDIST = "pytest==9.2.0"
MEMBER = "testing/example_scripts/junit-10.xsd"


def junit_xsd() -> Path:
    xsd = lab_home() / "junit-schema" / "junit-10.xsd"
    if xsd.exists():
        return xsd
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                PYTEST_SDIST,
                "-d",
                tmp,
            ],
            check=True,
            timeout=300,
        )
        (sdist,) = Path(tmp).glob("pytest-*.tar.gz")
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith(MEMBER))
            data = tar.extractfile(member).read()
    xsd.parent.mkdir(parents=True, exist_ok=True)
    partial = xsd.with_suffix(".partial")
    partial.write_bytes(data)
    partial.rename(xsd)
    return xsd


def assert_valid_junit(path: Path) -> None:
    import xmlschema

    xmlschema.XMLSchema(str(junit_xsd())).validate(str(path))
