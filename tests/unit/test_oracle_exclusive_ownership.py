"""exclusive-ownership: two owners in a generation, zombies, split brain."""
from oracle import check_history

CHECK = "exclusive-ownership"


def run(builder, **options):
    return check_history(builder.build(), {CHECK: options}).checks[CHECK]


def test_a_clean_handover_passes(history_builder):
    b = history_builder()
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
    c1.at(100).consumed(3, 0, 9)
    b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=1000)
    c2.at(1100).consumed(3, 10, 19)
    result = run(b)
    assert (result.status, result.violations, result.findings) == ("passed", [], [])
    assert result.detail == {"sessions": 10, "overlapping_sessions": 0}  # eager: all 5 revoked, all 5 handed out again


def test_two_owners_in_one_generation_is_a_violation(history_builder):
    b = history_builder()
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [2, 3, 4]}, at=0)
    [v] = run(b).violations
    assert (v.kind, v.partition, v.members, v.generation) == ("two-owners-in-generation", "events-2",
                                                              ("consumer-1", "consumer-2"), 1)
    assert v.message.startswith("events-2 had two owners in generation 1: consumer-1 (generation 1, ")


def test_a_paused_zombie_is_a_finding(pause_story):
    result = run(pause_story)
    assert result.status == "passed" and result.violations == []
    assert [(f.kind, f.partition) for f in result.findings] == [("zombie-overlap", "events-3"),
                                                                ("zombie-overlap", "events-4")]
    f = result.findings[0]
    assert f.members == ("consumer-2", "consumer-1") and f.generation == 2
    assert "consumer-2 (generation 1, t+3.190s..t+20.010s, lost) still owned it for 4.9 s" in f.message
    assert "after consumer-1 (generation 2, t+15.130s..t+20.100s, revoked) took it over" in f.message
    assert f.times["overlap_start"].mono_ms == pause_story.events[0]["mono_ms"] + 15130


def split_brain(pause_story):
    # consumer-1 took events-3 over at 15130 and processed from the committed offset;
    # the zombie finished the batch it held before it learnt of the loss at 20010.
    pause_story.at(15500)
    pause_story["consumer-1"].consumed(3, 100, 149)
    pause_story.at(20005)
    pause_story["consumer-2"].consumed(3, 100, 119)
    return pause_story


def test_split_brain_is_a_finding_by_default(pause_story):
    result = run(split_brain(pause_story))
    assert result.status == "passed"
    f = next(f for f in result.findings if f.partition == "events-3")
    assert f.kind == "split-brain" and f.offsets == "100-149" and f.count == 50
    assert "both processed records in that window: consumer-2 offsets 100-119, consumer-1 offsets 100-149" in f.message


def test_split_brain_fails_when_the_scenario_says_so(pause_story):
    result = run(split_brain(pause_story), split_brain="fail")
    assert result.status == "failed"
    [v] = result.violations
    assert (v.kind, v.partition, v.members) == ("split-brain", "events-3", ("consumer-2", "consumer-1"))
    assert [f.kind for f in result.findings] == ["zombie-overlap"]  # events-4: nobody processed it


def test_processing_outside_any_session_is_a_finding(history_builder):
    b = history_builder()
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    c1.at(100).consumed(1, 0, 4)
    [f] = run(b).findings
    assert (f.kind, f.partition, f.offsets, f.members) == ("consumed-while-unowned", "events-1", "0-4", ("consumer-1",))
