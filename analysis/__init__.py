"""PySpark analysis of run histories (issue 6) — WORK IN PROGRESS, not wired into the CLI yet.

Reads histories only (never the cluster). Not imported by the harness or the tests;
PySpark and matplotlib are not yet in pyproject.toml.
"""
