"""The Locust side of a load run (see workloads/load/__init__.py); Locust loads this file.

    python -m locust -f workloads/load/locustfile.py --lab-spec SPEC.json --headless --csv PREFIX

- ``ProfileShape``: each tick, the profile's member count (held after its end, until the run is done);
- ``Member``: one user per member of the group. Locust's own user count (on a master, the
  sum its workers report) is the count the run follows: written to the control file on change;
- the feed: every second (less often when its pass is slow: FEED_PAUSE_PER_PASS), rebalances
  the oracle has measured and settled become requests (type ``rebalance``, name the protocol,
  response time its duration in ms, length the partitions it moved), and each record's
  latencies (type ``record``, names ``produce`` and ``end-to-end``). It runs where requests
  are counted: the one process of a local run, or the first worker of a distributed one.
  Once the history says ``done`` it tells the last ones, then Locust quits: a worker says so
  in the same report to its master that carries those last requests, so the master never
  quits before it has counted them.
- with ``load.member_hosts: on-workers`` (workloads/load/member_hosts.py), each worker starts
  a member host and shares no file with the run: it is started without ``--lab-spec``, asks
  its master which host to run and where the harness's link is, and starts it; the feed then
  runs on the master, the one that reads the history.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import gevent
from locust import LoadTestShape, User, constant, events, task
from locust.runners import STATE_RUNNING, LocalRunner, MasterRunner, WorkerRunner
from locust.stats import CSV_STATS_INTERVAL_SEC

from workloads.load import RECORD_TYPE, REQUEST_TYPE, LoadSpec, member_hosts
from workloads.load.feed import RebalanceFeed
from workloads.load.profile import LoadProfile

FEED_EVERY_S = 1.0
# A pass of the feed judges the whole history so far (seconds at 1,000 members, and growing): it
# runs in a thread of its own, so Locust's loop (the shape's ticks, the count, the reports) goes
# on meanwhile, and waits this many times its last pass before the next, so it takes at most a
# quarter of a core from a machine the group's members and brokers need; at most FEED_PAUSE_MAX_S,
# since `done` is seen by a pass (the harness waits LOCUST_QUIT_S for Locust to quit after it).
FEED_PAUSE_PER_PASS = 3.0
FEED_PAUSE_MAX_S = 10.0
COUNT_EVERY_S = 0.2
_DONE = "rebalance-lab-done"  # in a worker's report to its master: every rebalance of the run is in it
# The spec and profile, once Locust has parsed its options; "done" once the run is; on the feeding
# worker "told" once every rebalance is told; on a master "finishing" once a worker's report said so.
_lab: dict = {}


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument(
        "--lab-spec", help="the run's LoadSpec (JSON), written by the harness; none on a worker with a member host"
    )


@events.init.add_listener
def _init(environment, **_kwargs) -> None:
    runner = environment.runner
    if environment.parsed_options.lab_spec is None:
        if not isinstance(runner, WorkerRunner):
            raise SystemExit("--lab-spec: only a worker whose member host its master names runs without one")
        _host_on_this_worker(environment)  # load.member_hosts on-workers: no file of the run here
        return
    spec = LoadSpec(**json.loads(Path(environment.parsed_options.lab_spec).read_text()))
    _lab.update(spec=spec, profile=LoadProfile.model_validate(spec.profile))
    on_workers = _lab["profile"].member_hosts == "on-workers"
    if isinstance(runner, (LocalRunner, MasterRunner)):
        gevent.spawn(_count, environment, spec, _lab["profile"])
    if isinstance(runner, MasterRunner):
        environment.events.worker_report.add_listener(lambda data, **_: _on_worker_report(environment, data))
        if on_workers:
            runner.register_message(member_hosts.ASK, lambda msg, **_: _name_host(runner, spec, msg.node_id))
    if isinstance(runner, WorkerRunner):
        environment.events.report_to_master.add_listener(lambda data, **_: _say_done(data))
    if isinstance(runner, (LocalRunner, WorkerRunner)) or (on_workers and isinstance(runner, MasterRunner)):
        gevent.spawn(_feed, environment, spec, _lab["profile"])


def _name_host(runner, spec: LoadSpec, worker: str) -> None:
    """Answer a worker's ask (each time: an answer may be lost if its handler was not registered yet)."""
    host = member_hosts.host_name(runner.get_worker_index(worker))
    answer = {"link": spec.link, "host": host, "driver": spec.host_driver}
    runner.send_message(member_hosts.ANSWER, answer, client_id=worker)


def _host_on_this_worker(environment) -> None:
    """Ask the master until it answers, then start the member host it names, once; it stops with the worker."""
    runner = environment.runner

    def start(msg, **_kwargs) -> None:
        if "host" not in _lab:
            _lab["host"] = member_hosts.start_member_host(msg.data["link"], msg.data["host"], msg.data["driver"])

    def ask() -> None:
        while "host" not in _lab:
            runner.send_message(member_hosts.ASK, None)
            gevent.sleep(1.0)

    def stop(**_kwargs) -> None:
        if "host" in _lab:
            proc, workdir = _lab["host"]
            member_hosts.stop_member_host(proc)
            shutil.rmtree(workdir, ignore_errors=True)

    runner.register_message(member_hosts.ANSWER, start)
    environment.events.quitting.add_listener(stop)
    gevent.spawn(ask)


@events.test_start.add_listener
def _started(**_kwargs) -> None:
    # Locust clears its stats as the test starts (a worker: at its master's first spawn message,
    # seconds after it started on a loaded machine): a request fired before then is not counted.
    _lab["started"] = True


def _say_done(report: dict) -> None:
    if _lab.get("told"):
        report[_DONE] = True


def _on_worker_report(environment, data: dict) -> None:
    """A report that says the run is done was merged with its requests: the CSV's next beat has them."""
    if data.get(_DONE) and not _lab.get("finishing"):
        _lab["finishing"] = True
        gevent.spawn(_finish_after_csv_beat, environment)


def _finish_after_csv_beat(environment) -> None:
    gevent.sleep(CSV_STATS_INTERVAL_SEC + 1)  # the CSV files are written on that beat, not on quitting
    _finish(environment)


def _finish(environment) -> None:
    """The run is done: stop, and end the process (with the web UI on, its server is what keeps it up)."""
    _lab["done"] = True
    environment.runner.quit()
    if environment.web_ui:
        environment.web_ui.stop()


def _count(environment, spec: LoadSpec, profile: LoadProfile) -> None:
    """Locust's user count, as the run's member count, whenever it changes — once Locust has
    spawned what the shape asked (before, and while spawning, the count is on its way) — and
    whether the profile is over (the run's workload lasts until it is).

    A master counts what its workers last reported, and it goes on running when their reports
    are late (a loaded machine: it waits a few seconds, then says "not all reports received"):
    until the count is the target it dispatched, it is a count on its way too (CI saw 0, then
    2, written for a profile that starts at 2: the group stopped and restarted)."""
    runner, control, written = environment.runner, Path(spec.control_file), None
    length = profile.length_s(spec.initial_members)
    while not _lab.get("done"):
        settled = runner.state == STATE_RUNNING and runner.user_count == runner.target_user_count
        over = environment.shape_class.get_run_time() >= length
        # The end of the profile is said even while a count is on its way (a worker that died
        # would keep it there): the members stay the last count Locust really spawned, if any.
        members = runner.user_count if settled or (over and not written) else written and written["members"]
        if members is not None:
            now = {"members": members, "profile_over": over}
            if now != written:
                tmp = control.with_suffix(".tmp")
                tmp.write_text(json.dumps(now))
                os.replace(tmp, control)
                written = now
        gevent.sleep(COUNT_EVERY_S)


def _feed(environment, spec: LoadSpec, profile: LoadProfile) -> None:
    feed, runner = RebalanceFeed(spec.history, profile.settle_s), environment.runner
    threads, pause = gevent.get_hub().threadpool, FEED_EVERY_S
    while True:
        gevent.sleep(pause)
        if not _lab.get("started"):
            continue  # what it told now would be cleared (_started)
        if isinstance(runner, WorkerRunner) and runner.worker_index != 0:
            continue  # the first worker tells them (its index comes once the master has answered)
        began = time.monotonic()
        settled = threads.apply(feed.settled)
        pause = min(FEED_PAUSE_MAX_S, max(FEED_EVERY_S, FEED_PAUSE_PER_PASS * (time.monotonic() - began)))
        for r in settled:
            environment.events.request.fire(
                request_type=REQUEST_TYPE,
                name=spec.protocol,
                response_time=r.duration_ms,
                response_length=r.partitions_moved,
                exception=None,
                context={"generation": r.generation, "trigger": r.trigger},
            )
        for kind, ms, records in feed.take_latencies():  # one request per record, as Locust counts them
            for _ in range(records):
                environment.events.request.fire(
                    request_type=RECORD_TYPE, name=kind, response_time=ms, response_length=0, exception=None, context={}
                )
        if feed.done:
            if isinstance(runner, WorkerRunner):
                _lab["told"] = True  # said in the next report to the master, with the requests above
            else:
                _finish_after_csv_beat(environment)
            return


class ProfileShape(LoadTestShape):
    def tick(self):
        if _lab.get("done"):
            return None
        members = _lab["profile"].members_at(_lab["spec"].initial_members, self.get_run_time())
        return members, 1000  # users are tokens: Locust may start or stop any number at once


class Member(User):
    """A member of the group, as Locust counts users; the harness runs the real one."""

    wait_time = constant(1)

    @task
    def hold(self) -> None:
        """A member has nothing to ask of Locust: it consumes in its own process."""
