"""Record the oracle's verdicts of real runs, or compare them with a recording (issue 41:
behaviour unchanged across a refactoring). Judges each history as `check` does, in one process:

    python3 tests/verdict_drift.py record RECORDING.json RUNS_DIR...
    python3 tests/verdict_drift.py compare RECORDING.json

`compare` exits 1 naming each run whose verdict (status, every check's outcome, every
violation) differs from the recording, 0 when all are identical.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from oracle import check_history, load_history
from oracle.history import HistoryError
from oracle.vocabulary import RUN_STARTED

RUN_DIR = re.compile(r"^\d{8}T\d{6}Z-")


def judge(history: Path) -> dict:
    try:
        events = load_history(history, compact_events=True)
    except HistoryError as e:
        return {"refused": str(e).replace(str(history), "<history>")}
    started = next((e for e in events if e["name"] == RUN_STARTED), {})
    return check_history(events, started.get("checks") or {}).to_dict()


def histories(roots: list[str]) -> list[Path]:
    return sorted(
        p
        for root in roots
        for p in Path(root).rglob("history.jsonl")
        if RUN_DIR.match(p.parent.name) and (p.parent / "verdict.json").exists()
    )


def main(argv: list[str]) -> int:
    mode, recording = argv[0], Path(argv[1])
    if mode == "record":
        verdicts = {str(p): judge(p) for p in histories(argv[2:])}
        recording.write_text(json.dumps(verdicts, sort_keys=True, indent=1))
        print(f"{len(verdicts)} verdicts recorded in {recording}")
        return 0
    before = json.loads(recording.read_text())
    changed = 0
    for path, verdict in before.items():
        now = json.loads(json.dumps(judge(Path(path)), sort_keys=True))
        if now != verdict:
            changed += 1
            print(f"CHANGED {path}: {verdict.get('status', 'refused')} -> {now.get('status', 'refused')}")
    print(f"{len(before) - changed} of {len(before)} verdicts identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
