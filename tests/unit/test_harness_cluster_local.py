"""The local backend's pure helpers."""

import uuid

from harness.cluster import local


def test_a_kraft_cluster_id_never_looks_like_an_option(monkeypatch):
    """base64url of a UUID whose first byte is 0xF8..0xFB starts with "-": kafka-storage would
    read `-t -xyz…` as a missing argument. Like Kafka's Uuid.randomUuid(), draw again."""
    drawn = iter([uuid.UUID(bytes=bytes([0xF8]) + bytes(15)), uuid.UUID(bytes=bytes([0x12]) + bytes(15))])
    monkeypatch.setattr(local.uuid, "uuid4", lambda: next(drawn))
    cluster_id = local._kraft_cluster_id()
    assert not cluster_id.startswith("-") and len(cluster_id) == 22
