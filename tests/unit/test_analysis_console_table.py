"""analyze's console table: the short group keys stay whole however wide the table grows (CI reads
it from a pipe, at the console's fixed width), the long ones may fold."""

from __future__ import annotations

from rich.console import Console

from analysis.cli import comparison_table


def test_a_wide_table_folds_the_client_and_scenario_never_the_protocol():
    row = {
        "protocol": "classic-cooperative",
        "assignor": "cooperative-sticky",
        "kafka": "3.9.2",
        "client": "confluent-kafka==2.16.1",
        "faults": "crash+pause",
        "scenario": "a-scenario-with-a-long-name-" * 3,
        "runs": 1,
        "metric": "rebalances",
        "sum": 4,
    }
    console = Console(width=140, record=True)
    console.print(comparison_table([row]))
    text = console.export_text()
    assert "classic-cooperative" in text and "cooperative-sticky" in text and "3.9.2" in text
    assert " ".join(text.split()).startswith(
        "Rebalances across runs (per protocol / assignor / kafka / client / faults / scenario)"
    )
