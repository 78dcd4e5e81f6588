"""librdkafka's own log lines (workloads/client_log.py) and what the librdkafka driver makes of
them (workloads/consumer.py): parsed from lines recorded from real runs (Kafka 3.9 classic,
Kafka 4.1 KIP-848), stamped with the instant librdkafka made them, read through fd 2 as they
are written, and — in a real member process against librdkafka's mock cluster — stamped on
the history's clock, in the order they happened, the generation known in on_assign."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest
from confluent_kafka import Producer

from oracle.protocols import GENERATIONS
from runtime.history import now
from tests.recording import STAMPED, Recording
from workloads.client_log import ClientLine, client_instant, parse_line
from workloads.consumer import GroupLogReader, LibrdkafkaSettings
from workloads.driver import MemberSpec, protocol_fields

REPO = Path(__file__).resolve().parents[2]

# Recorded from real runs: one member of a classic group (Kafka 3.9) joining, then rejoining
# when a second member came, then unsubscribing; a connection refused; a KIP-848 member (4.1).
CLASSIC = [
    '%7|1795457930.645|SUBSCRIPTION|sampler-1#consumer-1| [thrd:main]: Group "sampler": effective subscription list changed from 0 to 1 topic(s):',
    "%7|1795457930.645|SUBSCRIPTION|sampler-1#consumer-1| [thrd:main]:  Topic events with 4 partition(s)",
    '%7|1795457930.645|JOIN|sampler-1#consumer-1| [thrd:main]: 127.0.0.1:21578/1: Joining group "sampler" with 1 subscribed topic(s) and member id ""',
    "%7|1795457930.647|JOINGROUP|sampler-1#consumer-1| [thrd:main]: JoinGroup response: GenerationId -1, Protocol , LeaderId , my MemberId sampler-1-0bace38d-471c-412b-9741-051e3912cd55, member metadata count 0: Broker: Group member needs a valid member ID",
    '%7|1795457930.647|JOIN|sampler-1#consumer-1| [thrd:main]: 127.0.0.1:21578/1: Joining group "sampler" with 1 subscribed topic(s) and member id "sampler-1-0bace38d-471c-412b-9741-051e3912cd55"',
    "%7|1795457930.648|JOINGROUP|sampler-1#consumer-1| [thrd:main]: JoinGroup response: GenerationId 1, Protocol range, LeaderId sampler-1-0bace38d-471c-412b-9741-051e3912cd55 (me), my MemberId sampler-1-0bace38d-471c-412b-9741-051e3912cd55, member metadata count 1: (no error)",
    '%7|1795457930.648|GRPLEADER|sampler-1#consumer-1| [thrd:main]: Group "sampler": resetting group leader info: JoinGroup response clean-up',
    "%7|1795457930.650|SYNCGROUP|sampler-1#consumer-1| [thrd:main]: SyncGroup response: Success (38 bytes of MemberState data)",
    '%7|1795457936.671|HEARTBEAT|sampler-1#consumer-1| [thrd:main]: Group "sampler" heartbeat error response in state up (join-state steady, 4 partition(s) assigned): Broker: Group rebalance in progress',
    '%7|1795457936.671|REBALANCE|sampler-1#consumer-1| [thrd:main]: Group "sampler" is rebalancing (EAGER) in state up (join-state steady) with 4 assigned partition(s): rebalance in progress',
    '%7|1795457936.674|JOIN|sampler-1#consumer-1| [thrd:main]: 127.0.0.1:21578/1: Joining group "sampler" with 1 subscribed topic(s) and member id "sampler-1-0bace38d-471c-412b-9741-051e3912cd55"',
    "%7|1795457936.676|JOINGROUP|sampler-1#consumer-1| [thrd:main]: JoinGroup response: GenerationId 2, Protocol range, LeaderId sampler-1-0bace38d-471c-412b-9741-051e3912cd55 (me), my MemberId sampler-1-0bace38d-471c-412b-9741-051e3912cd55, member metadata count 2: (no error)",
    '%7|1795457936.676|GRPLEADER|sampler-1#consumer-1| [thrd:main]: Group "sampler": resetting group leader info: JoinGroup response clean-up',
    "%7|1795457936.686|SYNCGROUP|sampler-1#consumer-1| [thrd:main]: SyncGroup response: Success (30 bytes of MemberState data)",
    '%7|1795457948.897|SUBSCRIPTION|sampler-1#consumer-1| [thrd:main]: Group "sampler": effective subscription list changed from 1 to 0 topic(s):',
    '%7|1795457948.897|GRPLEADER|sampler-1#consumer-1| [thrd:main]: Group "sampler": resetting group leader info: unsubscribe',
    '%7|1795457948.897|REBALANCE|sampler-1#consumer-1| [thrd:main]: Group "sampler" initiating rebalance (EAGER) in state up (join-state steady) with 2 assigned partition(s): unsubscribe',
]
FAIL = "%3|1795457948.918|FAIL|sampler-bad#consumer-3| [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)"
KIP848 = [
    '%7|1795457995.720|HEARTBEAT|k-1#consumer-1| [thrd:main]: GroupCoordinator/1: ConsumerGroupHeartbeat of member id "2wNDPtYLR9q0zmNHIH4CAg", group id "sampler848", generation id 0, group instance id "(null)", current assignment "", subscribed topics "events((null))[-1]", subscribed topic regex "", remote assignor "(null)"',
    '%7|1795457995.809|HEARTBEAT|k-1#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "2wNDPtYLR9q0zmNHIH4CAg" with epoch 1',
    '%7|1795457995.813|HEARTBEAT|k-1#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "2wNDPtYLR9q0zmNHIH4CAg" with epoch 1',
    '%7|1795457995.813|HEARTBEAT|k-1#consumer-1| [thrd:main]: Target assignment acked, new current assignment  "events(wBNFuTRAS2+yu9y7J0UGCQ)[0], events(wBNFuTRAS2+yu9y7J0UGCQ)[1], events(wBNFuTRAS2+yu9y7J0UGCQ)[2], events(wBNFuTRAS2+yu9y7J0UGCQ)[3]"',
    '%7|1795458000.819|HEARTBEAT|k-1#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "2wNDPtYLR9q0zmNHIH4CAg" with epoch 1',
    '%7|1795458000.852|HEARTBEAT|k-1#consumer-1| [thrd:main]: ConsumerGroupHeartbeat response received for member id "2wNDPtYLR9q0zmNHIH4CAg" with epoch 2',
]


# --------------------------------------------------------------------- one line


def test_a_line_gives_its_level_instant_facility_client_and_message():
    line = parse_line(CLASSIC[5])
    assert line == ClientLine(
        level=7,
        wall_ms=1795457930648.0,
        facility="JOINGROUP",
        client="sampler-1#consumer-1",
        message="JoinGroup response: GenerationId 1, Protocol range, LeaderId sampler-1-0bace38d-471c-412b-9741-"
        "051e3912cd55 (me), my MemberId sampler-1-0bace38d-471c-412b-9741-051e3912cd55, member metadata "
        "count 1: (no error)",
    )
    assert line.level_name == "DEBUG"


def test_an_error_line_and_its_thread_prefix():
    line = parse_line(FAIL)
    assert (line.level, line.level_name, line.facility) == (3, "ERROR", "FAIL")
    assert line.message.startswith("127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed")


def test_a_message_keeps_its_own_spacing_and_bars():
    assert parse_line(CLASSIC[1]).message == " Topic events with 4 partition(s)"
    assert parse_line("%6|1795457930.645|X|c#consumer-1| a | b").message == "a | b"


@pytest.mark.parametrize(
    "text",
    [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "%7 not a librdkafka line",
        "%9|1795457930.645|X|c#consumer-1| level out of range",
        "",
    ],
)
def test_anything_else_on_stderr_is_not_a_client_line(text):
    assert parse_line(text) is None


def test_a_client_instant_is_the_lines_wall_time_on_the_monotonic_clock():
    wall, mono = now()
    ts, mono_ms = client_instant(wall - 4700)  # a line made 4.7 s ago, read only now
    assert ts == wall - 4700
    assert mono - 4700 - 5 <= mono_ms <= mono - 4700 + 5


def test_a_client_instant_never_goes_before_the_members_previous_event():
    """Millisecond resolution: a line made just after an event may carry an earlier millisecond."""
    wall, mono = now()
    ts, mono_ms = client_instant(wall - 0.6, not_before_mono_ms=mono + 0.2)
    assert mono_ms == mono + 0.2
    assert ts - (wall - 0.6) == pytest.approx(mono_ms - (mono - 0.6), abs=0.5)


# --------------------------------------------------------------------- the driver's reading


class RecordingMember:
    """What GroupLogReader needs of a Member: group state, and where events go."""

    def __init__(self, assignor: str = "range", protocol: str = "classic-eager"):
        self.generation = self.member_id = None
        self.spec = type("Spec", (), {"assignor": assignor, "incremental": GENERATIONS[protocol].incremental})()
        self.recording = Recording(lambda: (self.member_id, self.generation))
        self.joins = 0

    @property
    def events(self) -> list[tuple[str, float, dict]]:
        """(name, the instant librdkafka made its line, what the reader said)."""
        return [
            (e["name"], e["ts"], {k: v for k, v in e.items() if k not in STAMPED | {"name"}})
            for e in self.recording.written
        ]

    @property
    def written(self) -> list[dict]:
        return self.recording.written

    def join_sent(self) -> None:
        self.joins += 1

    def names(self) -> list[str]:
        return [name for name, _, _ in self.events]


def read(lines: list[str], member: RecordingMember) -> RecordingMember:
    reader = GroupLogReader(member, member.recording.events)
    for text in lines:
        reader(parse_line(text))
    return member


def test_a_classic_members_joins_are_read_with_the_instant_each_step_happened():
    m = read(CLASSIC, RecordingMember())
    assert m.names() == [
        "subscription_changed",
        "group_join_sent",
        "group_join_failed",
        "group_join_sent",
        "group_joined",
        "group_synced",
        "heartbeat_failed",
        "rebalance_started",
        "group_join_sent",
        "group_joined",
        "group_synced",
        "subscription_changed",
    ]
    by_name = {}
    for name, wall_ms, fields in m.events:
        by_name.setdefault(name, []).append((wall_ms, fields))
    assert by_name["subscription_changed"][0] == (1795457930645.0, {"topics": {"events": 4}})
    assert by_name["group_join_failed"] == [(1795457930647.0, {"error": "Group member needs a valid member ID"})]
    member_id = "sampler-1-0bace38d-471c-412b-9741-051e3912cd55"
    assert by_name["group_joined"] == [
        (1795457930648.0, {"leader_id": member_id, "is_leader": True, "protocol_name": "range"}),
        (1795457936676.0, {"leader_id": member_id, "is_leader": True, "protocol_name": "range"}),
    ]
    assert [(e["generation"], e["member_id"]) for e in m.written if e["name"] == "group_joined"] == [
        (1, member_id),
        (2, member_id),
    ]
    assert by_name["heartbeat_failed"] == [(1795457936671.0, {"error": "Broker: Group rebalance in progress"})]
    assert by_name["rebalance_started"] == [
        (1795457936671.0, {"reason": "rebalance in progress", "rebalance_protocol": "EAGER"})
    ]
    assert [w for w, _ in by_name["group_join_sent"]] == [1795457930645.0, 1795457930647.0, 1795457936674.0]
    assert by_name["subscription_changed"][1] == (
        1795457948897.0,
        {"topics": {}},
    )  # the unsubscribe: no rebalance_started
    assert (m.generation, m.member_id, m.joins) == (2, member_id, 3)


def test_a_follower_is_not_the_leader():
    m = read(
        [
            "%7|1795457936.676|JOINGROUP|sampler-2#consumer-2| [thrd:main]: JoinGroup response: GenerationId 2, "
            "Protocol range, LeaderId sampler-1-0bace38d-471c-412b-9741-051e3912cd55, my MemberId "
            "sampler-sampler-2-8d523117-1397-404a-a3de-2d8136670980, member metadata count 0: (no error)"
        ],
        RecordingMember(),
    )
    [event] = m.written
    assert (event["name"], event["is_leader"], event["member_id"]) == (
        "group_joined",
        False,
        "sampler-sampler-2-8d523117-1397-404a-a3de-2d8136670980",
    )


def test_warnings_and_errors_become_client_log_debug_lines_do_not():
    m = read(
        [
            FAIL,
            '%7|1795457930.648|GRPLEADER|sampler-1#consumer-1| [thrd:main]: Group "sampler": resetting '
            "group leader info: JoinGroup response clean-up",
        ],
        RecordingMember(),
    )
    assert m.events == [("client_log", 1795457948918.0, {"level": "ERROR", "message": parse_line(FAIL).message})]


def test_a_kip848_members_epochs_are_its_generations():
    m = read(KIP848, RecordingMember(assignor="uniform"))
    assert m.names() == ["group_join_sent", "group_joined", "group_synced", "group_joined"]
    [(_, sent_at, _), (_, joined_at, joined), _, _] = m.events
    assert (sent_at, joined_at) == (1795457995720.0, 1795457995809.0)
    assert joined == {"leader_id": None, "is_leader": False, "protocol_name": "uniform"}
    assert [(e["generation"], e["member_id"]) for e in m.written if e["name"] == "group_joined"] == [
        (1, "2wNDPtYLR9q0zmNHIH4CAg"),
        (2, "2wNDPtYLR9q0zmNHIH4CAg"),
    ]


# A cooperative member (librdkafka's rd_kafka_cgrp_rejoin format): told by a heartbeat that the
# group rebalances it rejoins at once, keeping its partitions — no "is rebalancing" line.
COOPERATIVE = [
    '%7|1795460000.100|HEARTBEAT|c-1#consumer-1| [thrd:main]: Group "coop" heartbeat error response in state up (join-state steady, 3 partition(s) assigned): Broker: Group rebalance in progress',
    '%7|1795460000.101|REJOIN|c-1#consumer-1| [thrd:main]: Group "coop": Rejoining group with 3 owned partition(s): Group is rebalancing',
    '%7|1795460000.102|JOIN|c-1#consumer-1| [thrd:main]: 127.0.0.1:21578/1: Joining group "coop" with 1 subscribed topic(s) and member id "c-1-aa"',
    "%7|1795460000.300|JOINGROUP|c-1#consumer-1| [thrd:main]: JoinGroup response: GenerationId 3, Protocol cooperative-sticky, LeaderId c-1-aa (me), my MemberId c-1-aa, member metadata count 2: (no error)",
    "%7|1795460000.305|SYNCGROUP|c-1#consumer-1| [thrd:main]: SyncGroup response: Success (30 bytes of MemberState data)",
    # It gave a partition up: the follow-up rebalance hands it to the newcomer.
    '%7|1795460000.320|REJOIN|c-1#consumer-1| [thrd:main]: Group "coop": Rejoining group with 2 owned partition(s): Incremental unassignment done',
    '%7|1795460000.321|JOIN|c-1#consumer-1| [thrd:main]: 127.0.0.1:21578/1: Joining group "coop" with 1 subscribed topic(s) and member id "c-1-aa"',
    '%7|1795460000.330|REJOIN|c-1#consumer-1| [thrd:main]: Group "coop": Rejoining group with 2 owned partition(s): JoinGroup error: Broker: Not coordinator',
]


def test_a_cooperative_rejoin_is_the_start_of_a_rebalance_once_per_rebalance():
    m = read(COOPERATIVE, RecordingMember(assignor="cooperative-sticky", protocol="classic-cooperative"))
    assert m.names() == [
        "heartbeat_failed",
        "rebalance_started",
        "group_join_sent",
        "group_joined",
        "group_synced",
        "rebalance_started",
        "group_join_sent",
    ]  # a retried join is the same rebalance
    started = [(at, fields) for name, at, fields in m.events if name == "rebalance_started"]
    assert started == [
        (1795460000101.0, {"reason": "Group is rebalancing", "rebalance_protocol": "COOPERATIVE"}),
        (1795460000320.0, {"reason": "Incremental unassignment done", "rebalance_protocol": "COOPERATIVE"}),
    ]


def test_an_eager_members_rejoin_after_its_revoke_is_the_rebalance_it_announced():
    after_revoke = (
        CLASSIC[10]
        .replace("REBALANCE", "REJOIN")
        .replace(
            'Group "sampler" is rebalancing (EAGER) in state up (join-state steady) with 4 assigned partition(s): rebalance in progress',
            'Group "sampler": Rejoining group without an assignment: Unassignment done',
        )
    )
    m = read([*CLASSIC[9:11], after_revoke, *CLASSIC[11:]], RecordingMember())
    assert m.names().count("rebalance_started") == 1


def test_a_fenced_kip848_member_sends_a_new_join_and_retried_epoch_zero_heartbeats_are_the_same_join():
    retried = KIP848[0].replace("1795457995.720", "1795457996.720")  # no answer yet: sent again
    rejoin = KIP848[0].replace("1795457995.720", "1795458010.100")  # fenced: its epoch starts from 0 again
    answer = KIP848[1].replace("1795457995.809", "1795458010.200").replace("epoch 1", "epoch 2")
    m = read([KIP848[0], retried, *KIP848[1:], rejoin, answer], RecordingMember(assignor="uniform"))
    assert m.names() == [
        "group_join_sent",
        "group_joined",
        "group_synced",
        "group_joined",
        "group_join_sent",
        "group_joined",
    ]
    # The rejoin's answer is a join even at the epoch the member had before it was fenced.
    (_, rejoin_sent, _), (_, rejoined_at, _) = m.events[-2:]
    assert (rejoin_sent, rejoined_at, m.written[-1]["generation"]) == (1795458010100.0, 1795458010200.0, 2)


# --------------------------------------------------------------------- fd 2 through the tap (own process)


TAP_CHILD = textwrap.dedent("""
    import os, sys, time
    from workloads.client_log import StderrTap
    seen = []
    tap = StderrTap(lambda line: seen.append(line)).start()
    os.write(2, b"%7|1795457930.645|JOIN|c#consumer-1| [thrd:main]: Joining group \\"g\\"\\n")
    os.write(2, b"%7|1795457930.646|DUMP|c#consumer-1| [thrd:main]: Assignment dump\\n")
    os.write(2, b"%7|1795457930.646|PARTDEL|c#consumer-1| [thrd:b/1]: Not purging toppar fetch queue buffer. No ops\\n")
    with tap.caught_up():  # read on this thread: the line written just before is there
        print("caught up:", [l.message for l in seen], flush=True)
    os.write(2, b"python says hello\\n%4|1795457930.700|WARN|c#consumer-1| [thrd:main]: half")
    time.sleep(0.3)
    os.write(2, b" a line\\n")
    print("to stderr", file=sys.stderr, flush=True)
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the reader thread takes lines as they come
    print("read:", [(l.level, l.wall_ms, l.message) for l in seen], flush=True)
    raise SystemExit("the end")  # at exit, what is left in the spool goes on to the real stderr
""")


def test_the_tap_reads_client_lines_as_written_and_passes_all_of_stderr_on():
    proc = subprocess.run([sys.executable, "-c", TAP_CHILD], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert "caught up: ['Joining group \"g\"']" in proc.stdout
    assert "read: [(7, 1795457930645.0, 'Joining group \"g\"'), (4, 1795457930700.0, 'half a line')]" in proc.stdout
    assert proc.stderr.splitlines() == [  # the member's log, in the order written; no lines nobody reads
        '%7|1795457930.645|JOIN|c#consumer-1| [thrd:main]: Joining group "g"',
        "python says hello",
        "%4|1795457930.700|WARN|c#consumer-1| [thrd:main]: half a line",
        "to stderr",
        "the end",
    ]
    assert proc.returncode == 1


# --------------------------------------------------------------------- a real member process, mock cluster


@pytest.fixture(scope="module")
def mock_cluster():
    """librdkafka's mock cluster, kept by a producer in this process; other processes reach it over TCP."""
    found: list[str] = []

    class Bootstrap(logging.Handler):
        def emit(self, record):
            if m := re.search(r"replaced with (\S+)", record.getMessage()):
                found.append(m[1])

    log = logging.getLogger("mock-cluster")
    log.setLevel(logging.DEBUG)
    log.addHandler(Bootstrap())
    producer = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "unused:1"}, logger=log)
    producer.poll(0.1)
    for i in range(40):  # the mock cluster creates topics on first use, 4 partitions each
        producer.produce("events", value=b"x", partition=i % 4)
        producer.produce("other", value=b"y", partition=0)
    assert producer.flush(10) == 0
    yield found[0], producer
    producer.flush(1)


def mock_member_spec(
    history: Path, bootstrap: str, group: str, protocol: str = "classic-eager", hooks=None, **overrides
) -> MemberSpec:
    """A librdkafka member's spec for the mock cluster: consumer-1 of ``group`` on topic events."""
    fields = dict(
        member="consumer-1",
        incarnation=1,
        history=str(history),
        bootstrap_servers=bootstrap,
        group=group,
        topics=["events"],
        **protocol_fields(GENERATIONS[protocol]),
        assignor="range",
        commit="sync",
        processing_ms=0,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        max_poll_interval_ms=30000,
        settings=LibrdkafkaSettings(test_hooks=hooks),
    )
    return MemberSpec(**{**fields, **overrides})


def run_member(
    tmp_path, bootstrap: str, run_s: float | None, during=lambda: None, **overrides
) -> tuple[list[dict], int]:
    """``python -m workloads.consumer`` as the harness starts it; once it has its partitions,
    ``during()``, then SIGTERM after ``run_s`` (None: it stops by itself)."""
    protocol, hooks = overrides.pop("protocol", "classic-eager"), overrides.pop("test_hooks", None)
    spec = tmp_path / "spec.json"
    member = mock_member_spec(tmp_path / "history.jsonl", bootstrap, f"g-{tmp_path.name}", protocol, hooks, **overrides)
    spec.write_text(json.dumps(asdict(member)))
    with open(tmp_path / "member.log", "wb") as log:  # a file, as the harness gives it: a pipe nobody reads fills up
        proc = subprocess.Popen(
            [sys.executable, "-m", "workloads.consumer", str(spec)], cwd=REPO, stdout=log, stderr=subprocess.STDOUT
        )
    if run_s is not None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not _assigned(tmp_path):
            time.sleep(0.1)
        during()
        time.sleep(run_s)
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    events = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    return events, proc.returncode


def _assigned(tmp_path) -> bool:
    path = tmp_path / "history.jsonl"
    return path.exists() and '"partitions_assigned"' in path.read_text()


@pytest.fixture(scope="module")
def members(mock_cluster, tmp_path_factory):
    """Four member processes at once (each waits ~3 s for the mock coordinator's first rebalance)."""
    bootstrap, producer = mock_cluster
    runs = {
        "plain": dict(run_s=1.0),
        "sigterm": dict(run_s=None, protocol="classic-static", test_hooks={"sigterm_after_join": {"join": 1}}),
        "unassigned": dict(
            run_s=1.5,
            during=lambda: _produce(producer, "other", 0, 5),
            test_hooks={"consume_unassigned": {"topic": "other", "partition": 0}},
        ),
        "owned": dict(
            run_s=1.5,
            during=lambda: _produce(producer, "events", 0, 5),
            test_hooks={"consume_unassigned": {"topic": "events", "partition": 0}},
        ),
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {
            name: pool.submit(run_member, tmp_path_factory.mktemp(name), bootstrap, **kw) for name, kw in runs.items()
        }
        return {name: f.result() for name, f in futures.items()}


def test_a_member_stamps_its_protocol_steps_by_the_client_and_knows_its_generation_in_on_assign(members):
    events, code = members["plain"]
    assert code == 0
    steps = [e for e in events if e["name"] in ("group_join_sent", "group_joined", "group_synced")]
    assert steps and all(e["clock"] == "client" for e in steps)
    assert all(
        "clock" not in e
        for e in events
        if e["name"] in ("consumer_started", "partitions_assigned", "records_consumed", "offsets_committed")
    )
    joined = [e for e in events if e["name"] == "group_joined"][-1]
    assigned = next(e for e in events if e["name"] == "partitions_assigned")
    assert (assigned["generation"], assigned["member_id"]) == (joined["generation"], joined["member_id"])
    assert len(assigned["partitions"]) == 4
    # Written in the order they happened: the history's clock never goes back within the member.
    monos = [e["mono_ms"] for e in events]
    assert monos == sorted(monos)
    assert [e["name"] for e in events if e["name"] in ("group_joined", "group_synced", "partitions_assigned")][-3:] == [
        "group_joined",
        "group_synced",
        "partitions_assigned",
    ]


def test_sigterm_after_join_stops_the_member_right_after_its_joingroup(members):
    events, code = members["sigterm"]
    assert code == 0
    names = [e["name"] for e in events]
    assert names[:2] == ["consumer_started", "test_hook_armed"]
    assert names[-1] == "consumer_stopped"
    sent = names.index("group_join_sent")
    assert names[sent + 1] == "test_hook_fired"
    fired = events[sent + 1]
    assert (fired["hook"], fired["join"]) == ("sigterm_after_join", 1)
    assert "partitions_assigned" not in names


def _consumed(events: list[dict], topic: str, partition: int) -> list[int]:
    return sorted(
        o
        for e in events
        if e["name"] == "records_consumed"
        for r in e["ranges"]
        if (r["topic"], r["partition"]) == (topic, partition)
        for o in range(r["min_offset"], r["max_offset"] + 1)
    )


def _produce(producer: Producer, topic: str, partition: int, count: int) -> None:
    for _ in range(count):
        producer.produce(topic, value=b"live", partition=partition)
    assert producer.flush(10) == 0


def test_consume_unassigned_reads_a_partition_the_group_did_not_give_the_member(members):
    """From the log end on: what was written while the member ran, under the member's own name."""
    events, code = members["unassigned"]
    assert code == 0
    armed = next(e for e in events if e["name"] == "test_hook_armed")
    assert armed["params"] == {"topic": "other", "partition": 0}
    offsets = _consumed(events, "other", 0)
    assert len(offsets) == 5 and offsets == list(range(offsets[0], offsets[0] + 5)) and offsets[0] >= 40
    assert all(e["source"] == "consumer-1" for e in events if e["name"] == "records_consumed")


def test_consume_unassigned_stays_quiet_while_the_member_owns_the_partition(members):
    events, code = members["owned"]
    assert code == 0
    offsets = _consumed(events, "events", 0)
    assert len(offsets) == len(set(offsets)) >= 10  # each once: by the group's handle alone


def run_child(script: str, failure: str) -> str:
    """``script`` in its own process (a tap takes its fd 2): its stdout. Killed, with whatever it
    started, if it takes over 30 s: ``failure``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(failure)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, out
    return out


FLOOD_CHILD = textwrap.dedent("""
    import os, time
    from workloads.client_log import StderrTap
    LINE = b"%7|1795457930.645|FETCH|c#consumer-1| [thrd:b/1]: Fetch topic events [0] at offset 7\\n"
    def each_line_writes_another(line):  # a writer that never stops, and always has more than was read
        os.write(2, LINE)
    tap = StderrTap(each_line_writes_another).start()
    os.write(2, LINE * 1000)
    for _ in range(20):  # each catch-up reads what was written before it, so it returns
        started = time.monotonic()
        with tap.caught_up():
            pass
        print("caught up in", round(time.monotonic() - started, 3), flush=True)
    os._exit(0)
""")


def test_a_writer_that_never_stops_keeps_no_one_from_catching_up():
    # A librdkafka broker thread logging in a loop as its partitions went: with a drain that read
    # until nothing was left, whoever held the tap's lock held it for good, and a host hung.
    out = run_child(FLOOD_CHILD, "a catch-up never returned: the drain followed the writer")
    took = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("caught up in")]
    assert len(took) == 20 and max(took) < 5, took


GIL_HELD_CHILD = textwrap.dedent("""
    import ctypes, os, subprocess
    from workloads.client_log import StderrTap
    seen = []
    tap = StderrTap(seen.append).start()
    line = "%7|1795457930.645|CGRPOP|c#consumer-1| [thrd:main]: Group \\"g\\" received op ASSIGN"
    writer = subprocess.Popen(f"yes '{line}' | head -n 100000", shell=True, stdout=2)  # 10 MB
    status = ctypes.c_int()
    # As confluent-kafka's unassign() waits for the handle's main thread: in C, the GIL held.
    ctypes.PyDLL(None).waitpid(writer.pid, ctypes.byref(status), 0)
    with tap.caught_up():
        print("read", len(seen), flush=True)
    os._exit(0)
""")


def test_a_client_thread_never_waits_for_python_to_read_its_lines():
    # A member in unassign() holds the GIL until its handle's main thread has done the assign; a
    # main thread that waits for the tap to read its log line (a full pipe) waits for good.
    out = run_child(GIL_HELD_CHILD, "the writer waited for the tap while the GIL was held: deadlock")
    assert "read 100000" in out


ROTATE_CHILD = textwrap.dedent("""
    import os, time
    from workloads import client_log
    client_log.SPOOL_BYTES = 64 << 10
    seen = []
    tap = client_log.StderrTap(seen.append).start()
    first = os.fstat(2).st_ino
    for i in range(5000):
        os.write(2, b"%7|1795457930.645|FETCH|c#consumer-1| [thrd:b/1]: fetch " + str(i).encode() + b"\\n")
        if i % 500 == 0:
            time.sleep(0.02)  # the reader thread's turn
    with tap.caught_up():
        pass
    print("moved", os.fstat(2).st_ino != first, flush=True)
    tap.stop()
    print("read in order", [l.message for l in seen] == [f"fetch {i}" for i in range(5000)], flush=True)
    os._exit(0)
""")


def test_the_tap_moves_to_a_new_spool_as_it_reads_and_loses_no_line(tmp_path):
    with open(tmp_path / "member.log", "wb") as log:
        proc = subprocess.run(
            [sys.executable, "-c", ROTATE_CHILD], cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True, timeout=30
        )
    assert proc.stdout.splitlines() == ["moved True", "read in order True"], proc.stdout
    logged = (tmp_path / "member.log").read_text().splitlines()
    assert [line.rsplit(" ", 1)[-1] for line in logged] == [str(i) for i in range(5000)]


NO_ROOM_CHILD = textwrap.dedent("""
    import os
    from workloads import client_log
    client_log.SPOOL_BYTES = 4096
    seen = []
    before = os.fstat(2).st_ino
    tap = client_log.StderrTap(seen.append).start()
    def no_room():
        raise OSError(28, "No space left on device")
    client_log._Spool.create = no_room  # every rotation from here fails
    for i in range(2000):
        os.write(2, b"%7|1795457930.645|FETCH|c#consumer-1| [thrd:b/1]: fetch " + str(i).encode() + b"\\n")
    with tap.caught_up():
        pass
    print("read all", [l.message for l in seen] == [f"fetch {i}" for i in range(2000)], flush=True)
    print("reader alive", tap._reader.is_alive(), flush=True)
    tap.stop()
    print("fd 2 back", os.fstat(2).st_ino == before, flush=True)
    os._exit(0)
""")


def test_a_spool_that_cannot_be_replaced_goes_on_growing_and_loses_no_line(tmp_path):
    with open(tmp_path / "member.log", "wb") as log:
        proc = subprocess.run(
            [sys.executable, "-c", NO_ROOM_CHILD], cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True, timeout=30
        )
    assert proc.stdout.splitlines() == ["read all True", "reader alive True", "fd 2 back True"], proc.stdout
