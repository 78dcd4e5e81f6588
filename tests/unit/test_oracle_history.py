"""Offset-range algebra, loading a history file, and the History index."""

import json

import pytest

from oracle import History, load_history
from oracle.history import TopicPartition, render_partitions
from oracle.offsets import OffsetSet


class TestOffsetSet:
    def test_merges_overlapping_and_adjacent_ranges(self):
        assert OffsetSet([(5, 9), (0, 4), (12, 12), (8, 10)]).ranges == ((0, 10), (12, 12))

    def test_count_min_max_contains(self):
        s = OffsetSet([(120, 134), (140, 140)])
        assert (len(s), s.min, s.max) == (16, 120, 140)
        assert 133 in s and 135 not in s

    def test_subtract(self):
        s = OffsetSet.span(0, 20) - OffsetSet([(3, 5), (10, 10), (18, 30)])
        assert s.ranges == ((0, 2), (6, 9), (11, 17))

    def test_subtract_everything_and_nothing(self):
        assert not OffsetSet.span(1, 5) - OffsetSet.span(0, 9)
        assert OffsetSet.span(1, 5) - OffsetSet() == OffsetSet.span(1, 5)

    def test_intersect_and_union(self):
        a, b = OffsetSet([(0, 9), (20, 29)]), OffsetSet([(5, 24)])
        assert (a & b).ranges == ((5, 9), (20, 24))
        assert (a | b).ranges == ((0, 29),)

    def test_render(self):
        assert OffsetSet([(120, 134), (140, 140)]).render() == "120-134, 140"
        many = OffsetSet((i * 10, i * 10) for i in range(12))
        assert many.render(limit=3) == "0, 10, 20, … 9 more ranges"


def test_topic_partitions_render_like_kafka():
    tps = [TopicPartition("events", 2), TopicPartition("audit", 0), TopicPartition("events", 0)]
    assert str(tps[0]) == "events-2"
    assert render_partitions(tps) == "audit-0, events-0,2"


class TestLoadHistory:
    def write(self, path, lines):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def event(self, name, mono, source="harness", seq=1):
        return json.dumps({"name": name, "ts": 1e12 + mono, "mono_ms": mono, "source": source, "seq": seq})

    def test_sorts_by_mono_then_source_then_seq(self, tmp_path):
        self.write(
            tmp_path / "history.jsonl",
            [
                self.event("run_started", 5.0),
                self.event("b", 10.0, "producer", 1),
                self.event("a1", 10.0, "consumer-1", 1),
                self.event("a2", 10.0, "consumer-1", 2),
            ],
        )
        assert [e["name"] for e in load_history(tmp_path / "history.jsonl")] == ["run_started", "a1", "a2", "b"]

    def test_accepts_a_run_directory_and_skips_a_torn_last_line(self, tmp_path):
        self.write(tmp_path / "history.jsonl", [self.event("run_started", 1.0), self.event("b", 2.0), '{"name": "rec'])
        assert [e["name"] for e in load_history(tmp_path)] == ["run_started", "b"]

    def test_group_settings_must_be_an_object(self, tmp_path):
        started = json.loads(self.event("run_started", 1.0))
        self.write(tmp_path / "history.jsonl", [json.dumps({**started, "group_settings": "x"})])
        with pytest.raises(ValueError, match="history.jsonl:1: .*group_settings"):
            load_history(tmp_path)

    def test_events_that_say_nothing_to_judge_are_not_a_history(self, tmp_path):
        self.write(tmp_path / "history.jsonl", [self.event("phase", 1.0), self.event("run_finished", 2.0)])
        with pytest.raises(
            ValueError, match="history.jsonl: neither run_started nor any member's event: nothing to judge"
        ):
            load_history(tmp_path)
        member = json.loads(self.event("partitions_assigned", 3.0, "consumer-1"))  # a converted VerifiableConsumer log
        self.write(tmp_path / "history.jsonl", [json.dumps({**member, "member": "consumer-1", "partitions": []})])
        assert [e["name"] for e in load_history(tmp_path)] == ["partitions_assigned"]

    def test_a_torn_line_elsewhere_is_an_error(self, tmp_path):
        self.write(tmp_path / "history.jsonl", [self.event("a", 1.0), '{"name": "rec', self.event("b", 2.0)])
        with pytest.raises(ValueError, match="history.jsonl:2"):
            load_history(tmp_path)


def test_history_indexes_acked_and_consumed_offsets(history_builder):
    b = history_builder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    b.at(10).acked(0, 0, 9).acked(0, 10, 19).acked(1, 0, 4)
    b.at(20)
    c1.consumed(0, 0, 14).consumed(0, 10, 19)
    h = History(list(reversed(b.build())))  # order of lines does not matter
    assert h.partitions == [TopicPartition("events", 0), TopicPartition("events", 1)]
    assert h.acked[TopicPartition("events", 0)] == OffsetSet.span(0, 19)
    assert h.consumed[TopicPartition("events", 0)] == OffsetSet.span(0, 19)
    assert len(h.consumptions) == 2
    assert h.clock(h.t0 + 1500) == "t+1.500s"


def test_partitions_are_inferred_without_run_started(history_builder):
    b = history_builder(run_started=False)
    b.consumer("consumer-1").start().assigned(3)
    b.acked(("audit", 1), 0, 0)
    assert [str(tp) for tp in History(b.build()).partitions] == ["audit-1", "events-3"]
