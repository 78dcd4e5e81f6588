"""Kafka 3.7's ConsumerGroupDescribe, as the observer asks and reads it (workloads/group_describe.py).

The answer is built here field by field from 3.7.2's ConsumerGroupDescribeResponse.json (v0, flexible):
each member's Assignment ends with Error, MetadataVersion and MetadataBytes, which 3.8's stable v0 dropped.
"""

from __future__ import annotations

import struct
import uuid

import pytest

from workloads import group_describe as gd


def _s(text: str | None) -> bytes:
    return gd._uvarint(0) if text is None else gd._compact_string(text)


def _array(items: list[bytes]) -> bytes:
    return gd._uvarint(len(items) + 1) + b"".join(items)


TOPIC_ID = uuid.UUID("0d7925f5-ff42-4a6c-8f1c-1921bdef9be7")
ID = struct.unpack(">qq", TOPIC_ID.bytes)


def _assignment(topic: str, partitions: list[int]) -> bytes:
    tp = TOPIC_ID.bytes + _s("") + _array([struct.pack(">i", p) for p in partitions]) + gd._uvarint(0)
    return _array([tp]) + struct.pack(">bi", 0, 1) + gd._uvarint(1) + gd._uvarint(0)  # error, version, b"", tags


def _member(member_id: str, client_id: str, partitions: list[int]) -> bytes:
    return (
        _s(member_id)
        + _s(None)
        + _s(None)
        + struct.pack(">i", 3)
        + _s(client_id)
        + _s("/127.0.0.1")
        + _array([_s("events")])
        + _s(None)
        + _assignment("events", partitions)
        + _assignment("events", partitions)
        + gd._uvarint(0)
    )


def answer_37(members: list[bytes], error: int = 0, state: str = "stable") -> bytes:
    group = (
        struct.pack(">h", error)
        + _s(None)
        + _s("ea")
        + _s(state)
        + struct.pack(">ii", 4, 4)
        + _s("uniform")
        + _array(members)
        + struct.pack(">i", -(2**31))
        + gd._uvarint(0)
    )
    return struct.pack(">i", 0) + _array([group]) + gd._uvarint(0)


def test_a_37_answer_is_read_member_by_member_with_its_assignments():
    members = [_member("m1", "consumer-1", [0, 2]), _member("m2", "consumer-2", [1])]
    described = gd.parse_describe_early_access(gd.Reader(answer_37(members)), coordinator=1)
    assert (described.state, described.epoch, described.coordinator) == ("stable", 4, 1)
    assert [(m.client_id, m.member_id, m.assignment) for m in described.members] == [
        ("consumer-1", "m1", [(ID, 0), (ID, 2)]),
        ("consumer-2", "m2", [(ID, 1)]),
    ]


def test_an_answer_of_another_schema_or_with_an_error_is_refused_not_misread():
    stable_v0 = answer_37([_member("m1", "consumer-1", [0])]).replace(struct.pack(">bi", 0, 1) + gd._uvarint(1), b"")
    with pytest.raises(gd.KafkaProtocolError):
        gd.parse_describe_early_access(gd.Reader(stable_v0), coordinator=1)
    with pytest.raises(gd.KafkaProtocolError, match="error 69"):
        gd.parse_describe_early_access(gd.Reader(answer_37([], error=69, state="dead")), coordinator=1)


def test_requests_are_framed_with_header_v2():
    frame = gd.request(gd.CONSUMER_GROUP_DESCRIBE, 0, 7, gd.describe_body("ea"))
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    assert struct.unpack(">hhih", frame[4:14]) == (69, 0, 7, len(gd.CLIENT_ID))
    assert frame.endswith(gd._uvarint(2) + gd._compact_string("ea") + b"\x00" + gd._uvarint(0))
