"""Hosted members: many member incarnations in one process (one pid). A `client_destroyed` ends
its own incarnation as a crash, its host's `process_exited` ends every one it still ran; the
checks map a pid to the incarnations of that process, never to one."""

from oracle import History, check_history
from oracle.checks import client_health, history_integrity
from oracle.history import TopicPartition
from oracle.ownership import CRASHED, OWNED_AT_END, REVOKED, STOPPED, ownership_of

E = lambda p: TopicPartition("events", p)
MEMBERS = ("consumer-1", "consumer-2", "consumer-3")


def ends(b, partition):
    return [(str(s.slot), s.ended_by) for s in ownership_of(History(b.build())).of_partition(E(partition))]


def hosted(history_builder, hosts=(("member-host-1", 4242),), members=MEMBERS, partitions=None):
    """Members in hosts, m-th member in host m mod len(hosts); generation 1 gives member i partition i."""
    b = history_builder(topics={"events": partitions or len(members) + 1})
    for name, pid in hosts:
        b.host(name, pid)
    for i, m in enumerate(members):
        b.consumer(m).start(host=hosts[i % len(hosts)][0])
    b.rebalance(1, {m: [i] for i, m in enumerate(members)}, at=10)
    return b


def test_one_destroyed_handle_loses_its_own_partitions_only(history_builder):
    b = hosted(history_builder)
    b.at(100)
    b["consumer-2"].consumed(1, 0, 9)
    b.fault("crash", "consumer-2")
    b["consumer-2"].destroyed()
    b.at(150)
    b["consumer-1"].consumed(0, 0, 9)  # its hosts-mates go on: their pid did not exit
    b.rebalance(2, {"consumer-1": [0, 1], "consumer-3": [2]}, at=1000)
    b.at(1100)
    b["consumer-1"].consumed(1, 0, 9)  # the later owner re-delivers what the crashed one left uncommitted
    assert ends(b, 1) == [("consumer-2", CRASHED), ("consumer-1", OWNED_AT_END)]
    # eager: generation 2 revokes its host-mates' partitions, the destroy ended none of them
    assert ends(b, 0) == [("consumer-1", REVOKED), ("consumer-1", OWNED_AT_END)]
    assert ends(b, 2) == [("consumer-3", REVOKED), ("consumer-3", OWNED_AT_END)]
    verdict = check_history(b.done().build(), {})
    assert verdict.checks["exclusive-ownership"].violations == []
    assert verdict.checks[history_integrity.NAME].violations == []


def test_a_hosts_exit_ends_every_member_it_still_ran(history_builder):
    b = hosted(history_builder)
    b.at(100)
    b["consumer-1"].stopped()  # ended already: the exit is not its end
    b.at(200)
    b.host_exited("member-host-1", returncode=-9)
    assert ends(b, 0) == [("consumer-1", STOPPED)]
    assert ends(b, 1) == [("consumer-2", CRASHED)] and ends(b, 2) == [("consumer-3", CRASHED)]


def test_two_hosts_with_distinct_pids_end_apart(history_builder):
    b = hosted(history_builder, hosts=(("member-host-1", 4001), ("member-host-2", 4002)), members=MEMBERS)
    b.at(200)
    b.host_exited("member-host-2", returncode=-9)  # runs consumer-2 only
    assert ends(b, 1) == [("consumer-2", CRASHED)]
    assert ends(b, 0) == [("consumer-1", OWNED_AT_END)] and ends(b, 2) == [("consumer-3", OWNED_AT_END)]
    assert check_history(b.done().build(), {}).checks[history_integrity.NAME].violations == []


def test_a_host_dead_on_a_crash_signal_names_its_members(history_builder):
    b = hosted(history_builder)
    b.at(100)
    b["consumer-3"].destroyed()
    b.at(200)
    b.host_exited("member-host-1", returncode=-11)
    [anomaly] = client_health.check(History(b.build()), {}).violations
    assert anomaly.kind == "library-crash" and anomaly.members == ("consumer-1", "consumer-2")
    assert "member-host-1" in anomaly.message and "SIGSEGV" in anomaly.message


def test_a_host_stopped_cleanly_and_a_destroyed_handle_are_no_anomaly(history_builder):
    b = hosted(history_builder)
    b.at(100)
    b["consumer-1"].destroyed()
    for m in MEMBERS[1:]:
        b[m].stopped()
    b.host_exited("member-host-1", returncode=0)
    assert client_health.check(History(b.build()), {}).violations == []
