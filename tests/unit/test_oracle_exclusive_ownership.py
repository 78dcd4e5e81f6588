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
    assert (v.kind, v.partition, v.members, v.generation) == (
        "two-owners-in-generation",
        "events-2",
        ("consumer-1", "consumer-2"),
        1,
    )
    assert v.message.startswith("events-2 had two owners in generation 1: consumer-1 (generation 1, ")


def test_a_paused_zombie_is_a_finding(pause_story):
    result = run(pause_story)
    assert result.status == "passed" and result.violations == []
    assert [(f.kind, f.partition) for f in result.findings] == [
        ("zombie-overlap", "events-3"),
        ("zombie-overlap", "events-4"),
    ]
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


def test_processing_a_partition_never_owned_is_a_violation(history_builder):
    """The review's case: a member consumes a partition it was never assigned while the
    real owner consumes the same records. Not a zombie: exclusive ownership is broken."""
    b = history_builder()
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=0)
    c1.at(100).consumed(1, 0, 9)
    c2.at(150).consumed(1, 0, 4)
    result = run(b)
    assert result.status == "failed" and result.findings == []
    [v] = result.violations
    assert (v.kind, v.partition, v.offsets, v.count, v.members, v.generation) == (
        "consumed-without-ownership",
        "events-1",
        "0-4",
        5,
        ("consumer-2",),
        1,
    )
    assert v.message.startswith(
        "events-1: consumer-2 processed 5 records (offsets 0-4, t+0.150s..t+0.150s) "
        "without owning the partition: it had not been assigned events-1 in this "
        "incarnation by then (its generation then: generation 1); the owner was consumer-1 "
        "(generation 1, t+0.015s..the end, owned-at-end), which processed the same "
        "offsets 0-4"
    )
    assert set(v.times) == {"first", "last"}


def test_a_new_incarnation_never_owned_what_its_predecessor_did(history_builder):
    b = history_builder()
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    c1.at(100).consumed(0, 0, 4).exited(returncode=-9)
    b.consumer("consumer-1", incarnation=2).start().at(500).consumed(0, 5, 9)
    [v] = run(b).violations
    assert (v.kind, v.members) == ("consumed-without-ownership", ("consumer-1#2",))


def test_a_former_owner_processing_after_it_recorded_the_revoke_is_a_violation(history_builder):
    """Not a zombie: it had itself recorded giving the partition up before it went on."""
    b = history_builder()
    c1, _c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3, 4]}, at=0)
    b.rebalance(2, {"consumer-1": [0], "consumer-2": [1, 2, 3, 4]}, at=1000)
    c1.at(1500).consumed(1, 0, 4)
    result = run(b)
    assert result.findings == []
    [v] = result.violations
    assert (v.kind, v.partition, v.offsets, v.members, v.generation) == (
        "consumed-after-ownership",
        "events-1",
        "0-4",
        ("consumer-1",),
        2,
    )
    assert (
        "after its own ownership of the partition had ended: consumer-1 (generation 1, t+0.015s..t+1.000s, "
        "revoked) (its generation then: generation 2); the owner was consumer-2"
    ) in v.message


def kip848_first_joins(history_builder, then_revokes_at: float):
    """Seen on a real 4.1 broker under load: consumer-2 is given every partition at epoch 1;
    consumer-1 joins, epoch 3 moves events-2 to it; consumer-2 learns epoch 3 afterwards and
    revokes events-2 as its first act at that epoch."""
    b = history_builder(protocol="consumer", assignor="uniform")
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    c2.at(0).joined(1).assigned(0, 1, 2, 3, 4)
    c1.at(40).joined(3).assigned(2)
    c2.at(70).joined(3)
    c2.at(then_revokes_at).revoked(2)
    c2.assigned()
    return b


def test_kip848_a_partition_revoked_on_learning_the_epoch_was_held_at_the_old_one(history_builder):
    # KIP-848: a member that must give partitions up stays at its previous epoch until it has
    # revoked them — the overlap is a zombie's (consumer-2 had not yet learnt), not two owners in epoch 3.
    result = run(kip848_first_joins(history_builder, then_revokes_at=77))
    assert result.violations == []
    [f] = result.findings
    assert (f.kind, f.partition, f.members) == ("zombie-overlap", "events-2", ("consumer-2", "consumer-1"))
    assert "still owned it for 37 ms after consumer-1 (generation 3" in f.message


def test_kip848_a_partition_still_held_after_the_epochs_assignment_is_two_owners(history_builder):
    b = kip848_first_joins(history_builder, then_revokes_at=77)
    b.events = [e for e in b.events if e["name"] != "partitions_revoked"]  # consumer-2 keeps events-2 in epoch 3
    [v] = run(b).violations
    assert (v.kind, v.partition, v.generation) == ("two-owners-in-generation", "events-2", 3)
