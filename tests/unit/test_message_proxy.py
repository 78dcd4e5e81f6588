"""The message proxy (faults/message_proxy/) against a fake broker that speaks Kafka's frames with kio's
types: what each action does to the byte stream, the order answers keep, the rules' limits, the
ApiVersions cap, and the control API of the real process. On real brokers:
tests/integration/test_message_faults.py."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse
from kio.schema.consumer_group_heartbeat.v0.request import ConsumerGroupHeartbeatRequest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5.response import JoinGroupResponse as JoinGroupResponseV5
from kio.schema.join_group.v9.response import JoinGroupResponse as JoinGroupResponseV9
from kio.schema.offset_commit.v2.response import OffsetCommitResponse as OffsetCommitV2
from kio.schema.offset_commit.v2.response import OffsetCommitResponsePartition as CommitPartitionV2
from kio.schema.offset_commit.v2.response import OffsetCommitResponseTopic as CommitTopicV2
from kio.schema.offset_commit.v9.response import OffsetCommitResponse as OffsetCommitV9
from kio.schema.offset_commit.v9.response import OffsetCommitResponsePartition as CommitPartitionV9
from kio.schema.offset_commit.v9.response import OffsetCommitResponseTopic as CommitTopicV9
from kio.schema.offset_fetch.v8.response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_writer
from kio.static.primitive import i16, i32, i64

from faults.message_proxy import apis, frames
from faults.message_proxy.client import MessageProxyClient, MessageProxyError
from faults.message_proxy.rules import Rule, RuleError
from faults.message_proxy.server import Lane, MessageProxy
from tests.processes import Processes

REPO = Path(__file__).resolve().parents[2]
ZERO = datetime.timedelta(0)
HEARTBEAT = apis.APIS["Heartbeat"]


def encoded(*entities) -> bytes:
    out = io.BytesIO()
    for e in entities:
        entity_writer(type(e))(out, e)
    return out.getvalue()


def request(api_key: int, version: int, correlation_id: int, body) -> bytes:
    """A request frame, sized: header v2 where the body's version is flexible, else v1."""
    flexible = type(body).__flexible__
    header = (RequestHeaderV2 if flexible else RequestHeaderV1)(
        request_api_key=i16(api_key),
        request_api_version=i16(version),
        correlation_id=i32(correlation_id),
        client_id="c",
    )
    return frames.sized(encoded(header, body))


def heartbeat(correlation_id: int) -> bytes:
    body = HeartbeatRequest(group_id="g", generation_id=i32(1), member_id="m", group_instance_id=None)
    return request(12, 4, correlation_id, body)


def cgh(correlation_id: int, epoch: int) -> bytes:
    body = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=i32(epoch),
        instance_id=None,
        rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=300_000),
        subscribed_topic_names=("events",),
        server_assignor=None,
        topic_partitions=(),
    )
    return request(68, 0, correlation_id, body)


class FakeBroker:
    """Answers each request (in order) with an answer of no error: a Heartbeat or ConsumerGroupHeartbeat
    answer for those, an ApiVersions answer listing Heartbeat up to v99. It keeps what it got."""

    def __init__(self):
        self.got: list[tuple[int, int]] = []  # (api key, correlation id)
        self.server = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, r, w):
        try:
            while True:
                head = await r.readexactly(4)
                frame = await r.readexactly(int.from_bytes(head, "big"))
                api_key, version, correlation_id = frames.request_start(frame)
                self.got.append((api_key, correlation_id))
                w.write(frames.sized(self.answer(api_key, correlation_id)))
                await w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            w.close()

    @staticmethod
    def answer(api_key: int, correlation_id: int) -> bytes:
        if api_key == 18:
            keys = (
                ApiVersion(api_key=i16(12), min_version=i16(0), max_version=i16(99)),
                ApiVersion(api_key=i16(0), min_version=i16(0), max_version=i16(99)),  # Produce: no fault names it
            )
            body = ApiVersionsResponse(error_code=ErrorCode.none, api_keys=keys, throttle_time=ZERO)
            return encoded(ResponseHeaderV0(correlation_id=i32(correlation_id)), body)
        from kio.schema.consumer_group_heartbeat.v0.response import ConsumerGroupHeartbeatResponse
        from kio.schema.heartbeat.v4.response import HeartbeatResponse

        if api_key == 68:
            body = ConsumerGroupHeartbeatResponse(
                throttle_time=ZERO,
                error_code=ErrorCode.none,
                error_message=None,
                member_id="m",
                member_epoch=i32(1),
                heartbeat_interval=datetime.timedelta(seconds=5),
                assignment=None,
            )
        else:
            body = HeartbeatResponse(throttle_time=ZERO, error_code=ErrorCode.none)
        return encoded(ResponseHeaderV1(correlation_id=i32(correlation_id)), body)


class Harness:
    """A proxy (in-process) with one lane, for consumer-1, in front of a fake broker."""

    def __init__(self, tmp_path: Path):
        self.history = tmp_path / "history.jsonl"
        self.proxy = MessageProxy(str(self.history))
        self.broker = FakeBroker()

    async def __aenter__(self):
        port = await self.broker.start()
        await self.proxy.add_lane(Lane("lane", "127.0.0.1:0", f"127.0.0.1:{port}", "consumer-1", "broker-1"))
        self.port = self.proxy.lanes["lane"].server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.proxy.lanes["lane"].server.close()
        self.broker.server.close()

    async def connect(self):
        return await asyncio.open_connection("127.0.0.1", self.port)

    def rule(self, **d) -> None:
        self.proxy.add_rule(Rule.of({"fault_id": "f1", "member": "consumer-1", "api": "Heartbeat", **d}))

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.history.read_text().splitlines()] if self.history.exists() else []


async def answers(reader, n: int, t0: float) -> list[tuple[int, float]]:
    """(correlation id, seconds since t0) of the next n answers."""
    out = []
    for _ in range(n):
        head = await reader.readexactly(4)
        frame = await reader.readexactly(int.from_bytes(head, "big"))
        out.append((frames.response_correlation(frame), time.monotonic() - t0))
    return out


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_pipelined_requests_pass_in_order_and_each_answer_reaches_its_request(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            r, w = await h.connect()
            w.write(b"".join(heartbeat(c) for c in range(1, 51)))
            got = await answers(r, 50, time.monotonic())
            w.close()
            return got, h.broker.got, h.events()

    got, seen, events = run(go())
    assert [c for c, _ in got] == list(range(1, 51)) and [c for _, c in seen] == list(range(1, 51))
    assert events == []  # nothing acted on without a rule


def test_delay_holds_the_answer_and_every_later_one_on_the_connection(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            h.rule(action="delay", delay_ms=600, count=1)
            r, w = await h.connect()
            t0 = time.monotonic()
            w.write(heartbeat(1) + heartbeat(2) + heartbeat(3))
            got = await answers(r, 3, t0)
            w.write(heartbeat(4))  # the rule is spent: at once
            got += await answers(r, 1, time.monotonic())
            return got, h.events()

    got, events = run(go())
    assert [c for c, _ in got] == [1, 2, 3, 4]
    assert all(t >= 0.6 for _, t in got[:3]), got  # 2 and 3 came at once from the broker, yet keep their order
    assert got[3][1] < 0.6  # no longer held: sooner than the delay, however loaded the machine
    [e] = events
    assert (e["fault_id"], e["member"], e["broker"], e["api"], e["api_version"], e["correlation_id"]) == (
        "f1",
        "consumer-1",
        "broker-1",
        "Heartbeat",
        4,
        1,
    )
    assert (e["action"], e["delay_ms"], e["source"]) == ("delay", 600, "message-proxy")


def test_withhold_drops_the_answer_and_closes_the_connection_at_the_clients_timeout(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            h.rule(action="withhold", close_after_ms=400, count=1)
            r, w = await h.connect()
            t0 = time.monotonic()
            w.write(heartbeat(1) + heartbeat(2))
            data = await r.read()  # nothing until the proxy closes it
            closed_after = time.monotonic() - t0
            r2, w2 = await h.connect()  # the client reconnects: a new connection, served as ever
            w2.write(heartbeat(3))
            again = await answers(r2, 1, time.monotonic())
            return data, closed_after, again, h.broker.got, h.events()

    data, closed_after, again, seen, events = run(go())
    assert data == b"" and 0.4 <= closed_after < 10  # closed by the proxy, not by the test's own timeout
    assert [c for _, c in seen] == [1, 2, 3]  # the broker got both requests
    assert again[0][0] == 3
    [e] = events
    assert (e["action"], e["close_after_ms"], e["correlation_id"]) == ("withhold", 400, 1)


def test_cut_after_request_closes_before_the_answer_the_broker_processed(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            h.rule(action="cut-after-request", count=1)
            r, w = await h.connect()
            w.write(heartbeat(1))
            data = await r.read()
            return data, h.broker.got, h.events()

    data, seen, events = run(go())
    assert data == b"" and seen == [(12, 1)]
    assert events[0]["action"] == "cut-after-request"


def test_error_rewrites_the_answer_at_the_version_in_use(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            h.rule(action="error", error="REBALANCE_IN_PROGRESS", count=1)
            r, w = await h.connect()
            w.write(heartbeat(1) + heartbeat(2))
            out = []
            for _ in range(2):
                head = await r.readexactly(4)
                out.append(frames.decode_response(await r.readexactly(int.from_bytes(head, "big")), 12, 4))
            return out, h.events()

    out, events = run(go())
    assert [(hd.correlation_id, body.error_code) for hd, body in out] == [
        (1, ErrorCode.rebalance_in_progress),
        (2, ErrorCode.none),
    ]
    assert (events[0]["error"], events[0]["replaced_error"]) == ("REBALANCE_IN_PROGRESS", "NONE")


@pytest.mark.parametrize(
    "api, version, body",
    [
        (
            "JoinGroup",
            5,
            JoinGroupResponseV5(
                throttle_time=ZERO,
                error_code=ErrorCode.none,
                generation_id=i32(3),
                protocol_name="range",
                leader="m",
                member_id="m",
                members=(),
            ),
        ),
        (
            "JoinGroup",
            9,
            JoinGroupResponseV9(
                throttle_time=ZERO,
                error_code=ErrorCode.none,
                generation_id=i32(3),
                protocol_type="consumer",
                protocol_name="range",
                leader="m",
                skip_assignment=False,
                member_id="m",
                members=(),
            ),
        ),
        (
            "OffsetCommit",
            2,
            OffsetCommitV2(
                topics=(
                    CommitTopicV2(
                        name="t", partitions=(CommitPartitionV2(partition_index=i32(0), error_code=ErrorCode.none),)
                    ),
                ),
            ),
        ),
        (
            "OffsetCommit",
            9,
            OffsetCommitV9(
                throttle_time=ZERO,
                topics=(
                    CommitTopicV9(
                        name="t", partitions=(CommitPartitionV9(partition_index=i32(0), error_code=ErrorCode.none),)
                    ),
                ),
            ),
        ),
    ],
    ids=["JoinGroup-v5", "JoinGroup-v9", "OffsetCommit-v2", "OffsetCommit-v9"],
)
def test_an_error_is_written_into_every_error_code_and_reads_back_at_that_version(api, version, body):
    schema = type(body)
    header = (ResponseHeaderV1 if schema.__flexible__ else ResponseHeaderV0)(correlation_id=i32(7))
    rewritten, replaced = frames.rewrite_error(encoded(header, body), apis.APIS[api], version, "NOT_COORDINATOR")
    hd, back = frames.decode_response(rewritten, apis.APIS[api].key, version)
    assert hd.correlation_id == 7 and replaced == "NONE"
    assert frames.first_error(back) == "NOT_COORDINATOR"
    assert back == frames.with_error(body, apis.APIS[api], ErrorCode.not_coordinator)
    assert (
        dataclasses.replace(
            back,
            **{
                f.name: getattr(body, f.name)
                for f in dataclasses.fields(body)
                if f.name not in ("error_code", "topics")
            },
        )
        == back
    )


def test_an_offset_fetch_answered_for_the_group_leaves_its_partitions_out_as_a_broker_does():
    """A partition's error is that partition's alone (librdkafka retries it); a coordinator error is the group's."""
    partition = OffsetFetchResponsePartitions(
        partition_index=i32(0), committed_offset=i64(5), metadata=None, error_code=ErrorCode.none
    )
    body = OffsetFetchResponse(
        throttle_time=ZERO,
        groups=(
            OffsetFetchResponseGroup(
                group_id="g",
                topics=(OffsetFetchResponseTopics(name="t", partitions=(partition,)),),
                error_code=ErrorCode.none,
            ),
        ),
    )
    out = frames.with_error(body, apis.APIS["OffsetFetch"], ErrorCode.not_coordinator)
    assert out.groups[0].error_code == ErrorCode.not_coordinator and out.groups[0].topics == ()


def test_count_probability_and_seed_decide_the_same_messages_every_time():
    def taken(**d) -> list[int]:
        rule = Rule.of({"fault_id": "f1", "member": "*", "api": "Heartbeat", "action": "delay", **d})
        return [c for c in range(200) if rule.takes("consumer-2", 12, heartbeat(c)[4:])]

    assert taken(count=3) == [0, 1, 2]
    some = taken(probability=0.1, seed=42)
    assert some == taken(probability=0.1, seed=42) and 5 < len(some) < 40
    assert some != taken(probability=0.1, seed=43)
    assert taken(probability=0.1, seed=42, count=2) == some[:2]
    other = Rule.of({"fault_id": "f1", "member": "consumer-1", "api": "Heartbeat", "action": "delay"})
    assert not other.takes("consumer-2", 12, heartbeat(1)[4:])  # another member's lane
    assert not other.takes("consumer-1", 14, heartbeat(1)[4:])  # another API


def test_match_takes_only_requests_with_those_fields():
    rule = Rule.of(
        {
            "fault_id": "f1",
            "member": "*",
            "api": "ConsumerGroupHeartbeat",
            "action": "withhold",
            "match": {"member_epoch": 0},
        }
    )
    assert [e for e in (5, 0, 7, 0) if rule.takes("consumer-1", 68, cgh(1, e)[4:])] == [0, 0]


@pytest.mark.parametrize(
    "rule, reason",
    [
        ({"api": "Produce", "action": "delay"}, "api: 'Produce' is none of"),
        ({"api": "Heartbeat", "action": "drop"}, "action: 'drop' is none of"),
        ({"api": "Heartbeat", "action": "error", "error": "OFFSET_OUT_OF_RANGE"}, "error: Heartbeat is never answered"),
    ],
)
def test_a_rule_the_proxy_cannot_take_is_refused_with_the_reason(rule, reason):
    with pytest.raises(RuleError, match=reason.replace("(", r"\(")):
        Rule.of({"fault_id": "f1", "member": "*", **rule})


def test_api_versions_answers_are_capped_at_what_kio_reads(tmp_path):
    async def go():
        async with Harness(tmp_path) as h:
            r, w = await h.connect()
            w.write(request(18, 3, 1, ApiVersionsRequest(client_software_name="t", client_software_version="1")))
            head = await r.readexactly(4)
            _, body = frames.decode_response(await r.readexactly(int.from_bytes(head, "big")), 18, 3)
            return {k.api_key: k.max_version for k in body.api_keys}, h.proxy.stats()

    versions, stats = run(go())
    assert versions == {12: HEARTBEAT.versions[-1], 0: 99}  # Heartbeat capped; an API no fault names left alone
    assert stats["capped_apis"] == {"Heartbeat": {"broker": 99, "capped": HEARTBEAT.versions[-1]}}


def start_proxy(processes: Processes, tmp_path: Path) -> tuple[subprocess.Popen, MessageProxyClient]:
    """The real process on a free port (another process may take the port first: then another port)."""
    import socket

    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = processes.popen(
            [
                sys.executable,
                "-m",
                "faults.message_proxy",
                "--control-port",
                str(port),
                "--history",
                str(tmp_path / "h"),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        client = MessageProxyClient(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 60  # its start imports kio: slow on a loaded machine
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                client.health()
                return proc, client
            except MessageProxyError:
                time.sleep(0.05)
        proc.kill()
        output = proc.communicate()[0].decode()
        assert "cannot listen" in output, output
    raise AssertionError("no free port for the message proxy's control API")


def test_a_test_that_fails_leaves_no_process_behind(tmp_path):
    """A test that fails inside a pytest run of its own: the process it started is gone when it ends."""
    pid_file = tmp_path / "pid"
    (tmp_path / "test_fails.py").write_text(
        "import sys\n"
        "from tests.processes import Processes\n"
        "def test_fails_on_purpose():\n"
        "    with Processes() as processes:\n"
        "        proc = processes.popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"        open({str(pid_file)!r}, 'w').write(str(proc.pid))\n"
        "        assert False, 'on purpose'\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            str(tmp_path / "test_fails.py"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # a bare pytest: fast
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and "on purpose" in run.stdout, run.stdout + run.stderr
    pid = int(pid_file.read_text())
    # A pid is given again once its process is gone (thousands of threads a minute here): only a
    # process that is still the sleeper the inner test started is one it left behind.
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return  # gone
    if b"time.sleep(60)" not in cmdline:
        return  # gone, its pid another process's now
    os.kill(pid, signal.SIGKILL)  # ours, orphaned: stop it before failing
    raise AssertionError(f"the failed test left process {pid} running")


def test_the_process_and_its_control_api(tmp_path):
    """The real process: lanes and rules through the client, a bad rule refused with its reason."""
    with Processes() as processes:
        proc, client = start_proxy(processes, tmp_path)
        assert client.health() == {"lanes": 0}
        client.add_lane("message-lane-1.broker-1", "127.0.0.1:0", "127.0.0.1:1", "consumer-1", "broker-1")
        client.add_rule(
            {"fault_id": "f1", "member": "consumer-1", "api": "Heartbeat", "action": "delay", "delay_ms": 5}
        )
        client.add_rule({"fault_id": "f2", "member": "*", "api": "SyncGroup", "action": "withhold"})
        assert client.rules() == ["f1", "f2"]
        with pytest.raises(MessageProxyError, match="error: Heartbeat is never answered 'OFFSET_OUT_OF_RANGE'"):
            client.add_rule(
                {"fault_id": "f3", "member": "*", "api": "Heartbeat", "action": "error", "error": "OFFSET_OUT_OF_RANGE"}
            )
        assert client.remove_rule("f1") and not client.remove_rule("f1")
        client.reset()
        assert client.rules() == [] and client.stats()["lanes"]["message-lane-1.broker-1"]["connections"] == 0
    assert proc.poll() is not None  # stopped with the block
