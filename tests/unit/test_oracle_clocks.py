"""The two clocks a verdict shows: t+ (from run_started) and workload+ (the faults' at_s, from the
workload phase's start), told apart wherever both appear."""

from pathlib import Path

from harness.reports.run import summary_markdown
from oracle import check_history
from oracle.history import History
from oracle.verdict import fault_lines


def _two_clocks(history_builder):
    b = history_builder(topics={"events": 1})
    b.events[0]["faults"] = [{"fault_id": "f1", "kind": "pause", "target": "consumer-2", "at_s": 8.0, "on": None}]
    b.at(5000).phase("workload")
    b.at(13000).fault("pause", "consumer-2")
    b.at(25000).healed("pause", "consumer-2")
    return b


def test_a_fault_time_is_written_on_both_clocks(history_builder):
    h = History(_two_clocks(history_builder).build())
    assert h.workload_started == 5000
    assert h.fault_clock(8) == "workload+8s (t+13.000s)"
    assert h.clock(13000) == "t+13.000s"


def test_the_verdict_relates_the_clocks(history_builder):
    verdict = check_history(_two_clocks(history_builder).build(), {"duplicates": {}})
    stats = verdict.to_dict()["stats"]
    assert stats["workload_started_t_s"] == 5.0
    assert [(f["fault_id"], f["at_s"], f["started_t_s"], f["healed_t_s"]) for f in stats["faults"]] == [
        ("f1", 8.0, 13.0, 25.0)
    ]
    [line] = fault_lines(stats)
    assert (
        line
        == "f1 pause consumer-2: scheduled at workload+8s (at_s 8), started t+13.000s, healed t+25.000s (scheduled)"
    )
    rendered = verdict.render().splitlines()
    assert (
        "times: t+ counts from the run's start; workload+ (the faults' at_s) from the workload's start, "
        "which was t+5.000s"
        in rendered
        and f"fault {line}" in rendered
    )
    md = summary_markdown(verdict.to_dict(), Path("runs/x"))
    assert f"- {line}" in md.splitlines() and "which was t+5.000s." in md
