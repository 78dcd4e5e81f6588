"""A librdkafka member stopped inside a poll stall goes straight to its close: no last poll
serves what waits in its queue (an assignment the group gave it meanwhile), as an application
whose long step was cut short by its shutdown (librdkafka #4527's trigger)."""

from __future__ import annotations

import threading
from unittest import mock

import workloads.consumer as consumer_module


class FakeConsumer:
    def __init__(self):
        self.polls = 0
        self.closed = False

    def subscribe(self, *args, **kwargs):
        pass

    def consume(self, **kwargs):
        self.polls += 1
        return []

    def close(self):
        self.closed = True


def member(stopped_in_stall: bool):
    m = consumer_module.Member.__new__(consumer_module.Member)  # no librdkafka: the loop only
    m.spec = mock.MagicMock()
    m.spec.settings.test_hooks = None
    m.spec.settings.processing = "inline"
    m.stop = threading.Event()
    m.host, m.crashed, m.thawed = None, threading.Event(), threading.Event()
    m.thawed.set()
    m.command_pending = threading.Event()
    m.command_pending.set()
    m.events = mock.MagicMock()
    m.tap = mock.MagicMock()
    m.worker = None
    m.non_owner = None
    m.consumer = FakeConsumer()

    def obey(stop):  # the stall: SIGTERM arrives while it lasts, or not
        m.command_pending.clear()
        if stopped_in_stall:
            stop.set()

    def handle(batch):  # the poll after a stall that ran its course ends the run
        m.stop.set()

    m._obey = obey
    m._handle = handle
    return m


def test_stopped_inside_its_stall_it_closes_without_polling(monkeypatch):
    monkeypatch.setattr(consumer_module, "librdkafka_loaded", dict)
    m = member(stopped_in_stall=True)
    assert m.run() == 0
    assert m.consumer.polls == 0
    assert m.consumer.closed


def test_a_stall_that_ran_its_course_polls_again(monkeypatch):
    monkeypatch.setattr(consumer_module, "librdkafka_loaded", dict)
    m = member(stopped_in_stall=False)
    assert m.run() == 0
    assert m.consumer.polls == 1


class FatalEvent:
    """The _FATAL event a consumer's poll returns once its instance failed fatally."""

    def error(self):
        return consumer_module.KafkaError(consumer_module.KafkaError._FATAL)


def test_a_fatal_error_is_recorded_fatal_and_stops_the_member(monkeypatch):
    monkeypatch.setattr(consumer_module, "librdkafka_loaded", dict)
    m = member(stopped_in_stall=False)
    m.command_pending.clear()
    m.consumer.consume = lambda **kwargs: [FatalEvent()]
    del m._handle  # the real one: records_of writes the error
    m.spec.commit = "sync"
    m.spec.settings.processing = "inline"
    m._commit_progress = lambda retry: None
    assert m.run() == 1
    m.events.consumer_error.assert_called_once()
    assert m.events.consumer_error.call_args.kwargs["fatal"] is True
