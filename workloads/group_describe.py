"""ConsumerGroupDescribe as Kafka 3.7 answers it: the observer's view of a `consumer`-protocol group there.

Kafka 3.7 ships ConsumerGroupDescribe (KIP-848's DescribeGroups) as an unstable API whose v0 is not
the v0 that 3.8 made stable: each member's Assignment carries three more fields (Error int8,
MetadataVersion int32, MetadataBytes bytes; ConsumerGroupDescribeResponse.json of 3.7.2). librdkafka
parses the stable v0; on 3.7's answer its parse fails after the first member and frees that member's
assignment twice (rd_kafka_ConsumerGroupDescribeResponse_parse, to 2.16): the observer aborts (-6).
Its fallback, the classic DescribeGroups, says a consumer-protocol group is Dead without members.
So on 3.7 the observer asks itself, over one plain connection: FindCoordinator v3, then
ConsumerGroupDescribe v0 with 3.7's schema (flexible versions throughout).

Stdlib only: the observer process loads it.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

FIND_COORDINATOR, CONSUMER_GROUP_DESCRIBE = 10, 69
CLIENT_ID = b"rebalance-lab-observer"


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    client_id: str
    assignment: list[tuple[tuple[int, int], int]]  # (topic id as (most, least significant bits), partition)


@dataclass(frozen=True)
class DescribedGroup:
    state: str  # as 3.7 names it: "empty", "assigning", "reconciling", "stable", "dead"
    epoch: int
    coordinator: int
    members: list[DescribedMember]


class KafkaProtocolError(Exception):
    pass


# --------------------------------------------------------------------- encoding (flexible versions)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _compact_string(s: str) -> bytes:
    data = s.encode()
    return _uvarint(len(data) + 1) + data


def request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """A request frame with header v2 (client id as a plain nullable string, then no tagged fields)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID + _uvarint(0)
    return struct.pack(">i", len(header) + len(body)) + header + body


class Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise KafkaProtocolError("response shorter than its schema")
        chunk = self.data[self.at : self.at + n]
        self.at += n
        return chunk

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            byte = self.take(1)[0]
            n |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return n
            shift += 7

    def string(self) -> str | None:  # compact, nullable
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def bytes_(self) -> bytes | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1)

    def array(self, item) -> list:
        n = self.uvarint()
        return [] if n == 0 else [item() for _ in range(n - 1)]

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


# --------------------------------------------------------------------- requests


def find_coordinator_body(group: str) -> bytes:
    return _compact_string(group) + struct.pack(">b", 0) + _uvarint(0)  # key, key type GROUP, no tags


def parse_find_coordinator(r: Reader) -> tuple[int, str, int]:
    r.int32()  # throttle
    error, message = r.int16(), r.string()
    node, host, port = r.int32(), r.string(), r.int32()
    r.tags()
    if error:
        raise KafkaProtocolError(f"FindCoordinator: error {error} {message or ''}".strip())
    return node, host or "", port


def describe_body(group: str) -> bytes:
    return _uvarint(2) + _compact_string(group) + b"\x00" + _uvarint(0)  # [group], no authorized operations


def _assignment_37(r: Reader) -> list[tuple[tuple[int, int], int]]:
    def topic_partitions():
        topic_id = struct.unpack(">qq", r.take(16))  # (most, least significant bits), as Kafka's Uuid
        r.string()  # the topic name: 3.7 leaves it empty, the id alone says which topic
        partitions = r.array(r.int32)
        r.tags()
        return [(topic_id, p) for p in partitions]

    tps = [tp for t in r.array(topic_partitions) for tp in t]
    r.int8(), r.int32(), r.bytes_()  # 3.7's Error, MetadataVersion, MetadataBytes (gone in 3.8)
    r.tags()
    return tps


def parse_describe_early_access(r: Reader, coordinator: int) -> DescribedGroup:
    r.int32()  # throttle

    def member():
        member_id, _instance, _rack = r.string(), r.string(), r.string()
        r.int32()  # member epoch
        client_id, _host = r.string(), r.string()
        r.array(r.string), r.string()  # subscribed topic names, regex
        assignment = _assignment_37(r)
        _assignment_37(r)  # target assignment
        r.tags()
        return DescribedMember(member_id or "", client_id or "", sorted(assignment))

    def group():
        error, message = r.int16(), r.string()
        r.string()  # group id
        state, epoch = r.string() or "", r.int32()
        r.int32(), r.string()  # assignment epoch, assignor
        members = r.array(member)
        r.int32()  # authorized operations
        r.tags()
        if error:
            raise KafkaProtocolError(f"ConsumerGroupDescribe: error {error} {message or ''}".strip())
        return DescribedGroup(state, epoch, coordinator, members)

    [described] = r.array(group)
    r.tags()
    return described


# --------------------------------------------------------------------- the connection


class Connection:
    def __init__(self, host: str, port: int, timeout_s: float):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation = 0

    def ask(self, api_key: int, version: int, body: bytes) -> Reader:
        self.correlation += 1
        self.sock.sendall(request(api_key, version, self.correlation, body))
        (size,) = struct.unpack(">i", self._read(4))
        r = Reader(self._read(size))
        if r.int32() != self.correlation:
            raise KafkaProtocolError("a response to another request")
        r.tags()  # response header v1
        return r

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


def describe_37(bootstrap_servers: str, group: str, timeout_s: float) -> DescribedGroup:
    """The group as its coordinator describes it, asking the first bootstrap server that answers where it is."""
    failures = []
    for address in bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            first = Connection(host, int(port), timeout_s)
            try:
                node, c_host, c_port = parse_find_coordinator(
                    first.ask(FIND_COORDINATOR, 3, find_coordinator_body(group))
                )
            finally:
                first.close()
            coordinator = Connection(c_host, c_port, timeout_s)
            try:
                return parse_describe_early_access(
                    coordinator.ask(CONSUMER_GROUP_DESCRIBE, 0, describe_body(group)), node
                )
            finally:
                coordinator.close()
        except (OSError, KafkaProtocolError) as e:
            failures.append(f"{address}: {type(e).__name__}: {e}")
    raise LookupError("; ".join(failures) or "no bootstrap server")
