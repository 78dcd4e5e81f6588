"""fenced-commits and commit-monotonicity."""

import pytest

from oracle import check_history


def run(builder, check, **options):
    return check_history(builder.build(), {check: options}).checks[check]


class TestFencedCommits:
    CHECK = "fenced-commits"

    def test_owner_commits_pass_and_fenced_ones_are_counted(self, pause_story):
        c1, c2 = pause_story["consumer-1"], pause_story["consumer-2"]
        c1.at(16000).committed(3, 150)
        c2.at(20005).committed(3, 120, success=False, error="ILLEGAL_GENERATION")  # the fence working
        c2.committed(4, 80, success=False, error="ILLEGAL_GENERATION")
        c1.at(20100).committed(0, 40, trigger="revoke")  # the revoke callback: its event came first
        result = run(pause_story, self.CHECK)
        assert (result.status, result.violations) == ("passed", [])
        assert result.detail == {"commits_ok": 2, "commits_failed": {"ILLEGAL_GENERATION": 2}}

    def test_ownership_is_judged_when_the_request_was_sent(self, history_builder):
        b = history_builder()
        c1, _c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
        b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=1000)
        c1.at(1030).committed(3, 10, sent_at=990)  # sent before the revoke, answered after
        assert run(b, self.CHECK).violations == []

    def test_an_accepted_zombie_commit_is_a_violation(self, pause_story):
        pause_story["consumer-2"].at(20005).committed(3, 120, sent_at=20004)
        [v] = run(pause_story, self.CHECK).violations
        assert (v.kind, v.partition, v.offsets, v.members, v.generation) == (
            "commit-after-handover",
            "events-3",
            "120",
            ("consumer-2", "consumer-1"),
            1,
        )
        assert v.message == (
            "consumer-2 committed events-3 offset 120 successfully (generation 1, trigger after-processing, sent "
            "t+20.004s) but consumer-1 (generation 2, t+15.130s..t+20.100s, revoked) had taken events-3 over at "
            "t+15.130s: the coordinator should have fenced it"
        )

    def test_a_stale_assignment_read_late_by_a_zombie_takes_nothing_over(self, history_builder):
        """What a real Java member did: paused with its SyncGroup for generation 2 in flight, it
        read the answer on SIGCONT — after generation 3 gave the partition to consumer-1, whose
        commits in generation 3 are the current owner's."""
        b = history_builder()
        c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
        c1.at(1000).revoked().join_sent()
        c2.join_sent()
        c1.at(1010).joined(2).synced().assigned(0, 1, 2)
        c2.joined(2)  # ... and paused before its SyncGroup answer was read
        b.rebalance(3, {"consumer-1": [0, 1, 2, 3, 4]}, at=8000)
        c2.at(20000).synced().assigned(3, 4)  # generation 2's answer, read on SIGCONT
        c1.at(20050).committed(3, 99, sent_at=20040)
        assert run(b, self.CHECK).violations == []

    def test_a_commit_for_a_partition_never_owned_is_a_violation(self, history_builder):
        b = history_builder()
        c1 = b.consumer("consumer-1").start()
        b.rebalance(1, {"consumer-1": [0]}, at=0)
        c1.at(100).committed(4, 7)
        [v] = run(b, self.CHECK).violations
        assert (v.kind, v.partition, v.members) == ("commit-without-ownership", "events-4", ("consumer-1",))
        assert "but did not own events-4 then" in v.message

    def test_a_commit_after_its_own_revoke_in_that_generation_is_the_owners(self, history_builder):
        """What librdkafka's auto commit does on real brokers: it commits a revoked partition's
        stored offsets as it unassigns it, after the revoke callback, in the generation the
        member held it in; the coordinator accepts it until the group moves on."""
        b = history_builder()
        c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
        c1.at(3000).revoked().join_sent()
        c1.at(3004).committed(3, 50, trigger="auto")  # still generation 1: the group has not moved on
        c2.join_sent()
        c1.at(3020).joined(2).synced().assigned(0, 1, 2)
        c2.joined(2).synced().assigned(3, 4)
        c1.at(9000).revoked()
        c1.at(9004).committed(0, 90, trigger="auto").stopped()  # at close, generation 2
        assert run(b, self.CHECK).violations == []

    def test_a_commit_after_its_own_revoke_once_the_group_moved_on(self, history_builder):
        b = history_builder()
        c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
        b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=3000)
        c1.at(3100).committed(3, 50, trigger="auto", sent_at=3090)  # generation 2, which never gave it events-3
        c2.at(3200).revoked()
        b.rebalance(3, {"consumer-1": [0, 1, 2, 3, 4]}, at=3300)
        c2.at(3400).committed(4, 60, trigger="auto")  # generation 2's, after generation 3 gave it to consumer-1
        late, fenced = run(b, self.CHECK).violations
        assert (late.kind, late.partition, late.generation) == ("commit-without-ownership", "events-3", 2)
        assert (fenced.kind, fenced.partition, fenced.members, fenced.generation) == (
            "commit-without-ownership",
            "events-4",
            ("consumer-2",),
            2,
        )

    def test_a_commit_after_its_revoke_sent_once_another_member_joined_a_newer_generation(self, history_builder):
        """A zombie: consumer-1 revoked and stalled; consumer-2 joined generation 2 before consumer-1's
        generation-1 commit left, which the coordinator should have refused (ILLEGAL_GENERATION),
        though consumer-2 had not yet recorded its assignment."""
        b = history_builder()
        c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
        c1.at(3000).revoked().join_sent()
        c2.join_sent().at(3010).joined(2)
        c1.at(3020).committed(3, 50, trigger="auto")
        [v] = run(b, self.CHECK).violations
        assert (v.kind, v.partition, v.generation) == ("commit-without-ownership", "events-3", 1)

    @pytest.mark.parametrize("after_ms, violations", [(500, 0), (1500, 1)])
    def test_a_revoke_callback_commit_without_a_generation_gets_a_grace(self, history_builder, after_ms, violations):
        b = history_builder()
        c1 = b.consumer("consumer-1").start()
        b.rebalance(1, {"consumer-1": [0]}, at=0)
        c1.at(3000).revoked()
        event = c1.at(3000 + after_ms).committed(0, 50, trigger="revoke").history.events[-1]
        event["generation"] = None  # a driver that does not know it
        assert len(run(b, self.CHECK).violations) == violations

    def test_kip848_a_commit_after_its_revoke_at_the_epoch_it_learnt(self, history_builder):
        """A `consumer` member told of epoch 3 gives partitions up, then commits at epoch 3: the
        broker accepts it; at epoch 3 once it reached epoch 4 it would not (STALE_MEMBER_EPOCH)."""
        b = history_builder(protocol="consumer")
        c1 = b.consumer("consumer-1").start()
        c1.at(0).joined(2).assigned(0, 1, 2, 3, 4)
        c1.at(3000).joined(3).revoked(3, 4)
        c1.at(3004).committed(3, 50, trigger="auto")  # its epoch: 3, the one it revoked for
        assert run(b, self.CHECK).violations == []
        c1.at(4000).joined(4)
        c1.at(4004).committed(4, 60, trigger="auto")  # epoch 4 now, events-4 gone at epoch 3
        c1.at(4008).committed(3, 70, trigger="auto", sent_at=4006).history.events[-1]["generation"] = 3
        assert [(v.kind, v.partition) for v in run(b, self.CHECK).violations] == [
            ("commit-without-ownership", "events-4"),
            ("commit-without-ownership", "events-3"),
        ]

    def test_a_commit_after_losing_the_partition_is_a_violation(self, pause_story):
        pause_story["consumer-2"].at(20015).committed(3, 120)
        [v] = run(pause_story, self.CHECK).violations
        assert v.kind == "commit-without-ownership" and v.partition == "events-3"


class TestCommitMonotonicity:
    CHECK = "commit-monotonicity"

    @pytest.fixture
    def regression(self, pause_story):
        pause_story["consumer-1"].at(16000).committed(3, 150)
        pause_story["consumer-2"].at(20005).committed(3, 90)  # the zombie's late commit wins
        return pause_story

    def test_advancing_commits_pass(self, pause_story):
        c1 = pause_story["consumer-1"]
        c1.at(16000).committed(3, 150)
        c1.at(17000).committed(3, 150).committed(3, 170)
        pause_story["consumer-2"].at(20005).committed(3, 90, success=False, error="ILLEGAL_GENERATION")
        assert run(pause_story, self.CHECK).status == "passed"

    def test_a_backward_commit_is_a_violation(self, regression):
        [v] = run(regression, self.CHECK).violations
        assert (v.kind, v.partition, v.offsets, v.count) == ("offset-regression", "events-3", "90-149", 60)
        assert v.members == ("consumer-1", "consumer-2")
        assert v.message == (
            "events-3: committed offset went back from 150 (consumer-1, generation 2, sent t+16.000s) to "
            "90 (consumer-2, generation 1, sent t+20.005s); 60 records (90-149) will be read again"
        )

    def test_a_requested_reset_turns_it_into_a_finding(self, regression):
        result = run(regression, self.CHECK, allow_reset=True)
        assert result.status == "passed" and [f.kind for f in result.findings] == ["offset-regression"]
