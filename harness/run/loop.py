"""One run of a scenario: cluster → workload + faults → recovery → drain → history → verdict.

The run directory is the product of a run::

    runs/<id>/scenario.yaml     the scenario exactly as given
    runs/<id>/run.json          state: running | completed | interrupted | error (+ timings, the verdict's status,
                                the plugins installed: oracle.extensions), or killed: the harness died and
                                `cleanup` stopped what it left (harness.supervision.run_state)
    runs/<id>/history.jsonl     every event (docs/history.md)
    runs/<id>/cluster/          configs, data and logs of ZooKeeper, brokers, Toxiproxy (a link to the
                                pool's cluster when the run borrowed a shared one: run.json's shared_cluster
                                says how many runs, this one included, have had it)
    runs/<id>/logs/             stdout of producer and consumers
    runs/<id>/summary.md        the verdict for people
    runs/<id>/verdict.json      the oracle's verdict (written last, only for a completed run that was judged)
    runs/<id>/harness-error.txt the traceback of a bug of ours, if one happened

A run directory without ``verdict.json`` is not a finished run, whatever else it holds.
``run.json`` always reaches a final state, whatever the run, its teardown or the oracle did.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from coordinator.group import variant
from faults import network
from faults.capabilities import Capability
from faults.catalogue import from_spec
from faults.schedule import FaultScheduler
from faults.watch import TriggerWatcher
from harness.cluster.admin import TopicSpec
from harness.cluster.backend import ClusterBackend, open_cluster
from harness.cluster.cleanup import clean_up_after_dead_harnesses
from harness.cluster.config import INITIAL_REBALANCE_DELAY_MS
from harness.cluster.kinds import MessageProxyKind
from harness.cluster.shared import ClusterPool, unshareable
from harness.cluster.spec import ClusterSpec, ExternalTarget, MessageProxySpec, ProjectCoordinator
from harness.components import client_envs, inventory
from harness.paths import new_stamped_dir, point_latest
from harness.reports import run as reporting
from harness.run import brokerlog
from harness.run.brokerlog import CoordinatorLog
from harness.run.clients import Observer, WorkloadProcesses, run_client
from harness.run.targets import RunTargets
from harness.scenario import Scenario, redacted_scenario_text
from harness.supervision.processes import Supervisor, process_state
from harness.supervision.run_state import RUN_STATE, run_owner, write_json_atomically
from harness.supervision.service import stop_in_order
from harness.supervision.stop_signals import handled_by
from oracle import check_history, extensions, load_history
from oracle import vocabulary as ev
from oracle.history import HistoryError
from runtime.errors import (
    EXIT_BAD_INPUT,
    EXIT_FOR_VERDICT,
    EXIT_INTERRUPTED,
    EXIT_RUN_ERROR,
    AuthenticationFailed,
    ClusterError,
    LabError,
)
from runtime.history import BROKER_LOG_CLOCK, HistoryWriter, now
from runtime.recognition import log_unrecognised
from runtime.secrets import redact_text
from workloads.observer import ObserverSpec, ObserverStatus

Report = Callable[[str], None]
COORDINATOR_LOG_EVERY_S = 1.0  # how often the brokers' logs are read into the history while the run goes
PROFILE_GRACE_S = 30  # the longest a load run's workload waits past duration_s for Locust's profile to end
LOCUST_QUIT_S = 60  # from `done` to Locust's exit: its last feed pass over the whole history, its CSV files


class Interrupted(BaseException):
    """Ctrl-C, SIGTERM or SIGHUP to the harness: stop the run, tear everything down.

    Not an Exception, like KeyboardInterrupt: no ``except Exception`` on its way up (a retry
    loop, the oracle's guard around each check) may take it for an error and carry on.
    """


class RunStop:
    """A run's handler for Ctrl-C, SIGTERM and SIGHUP (a stop_signals mode), entered once for the whole run.

    Armed (the run's phases, its judging), the first signal raises Interrupted and disarms it.
    Disarmed (its handlers going in, its teardown, its last words), a signal is noted and waits:
    the next `arm` raises it, or it is the run's `stop_requested` (a suite stops after this run).
    A flag, not a change of handler, tells the two apart: nothing is swapped mid-run for a signal
    to slip between (it could skip the teardown or escape as Interrupted)."""

    def __init__(self) -> None:
        self.armed = False
        self.caught: str | None = None

    def __call__(self, signum, _frame) -> None:
        name = signal.Signals(signum).name
        if self.armed:
            self.armed = False  # once: a second Ctrl-C while the first unwinds waits like any other
            raise Interrupted(name)
        self.caught = self.caught or name

    def arm(self) -> None:
        if self.caught:  # it came while disarmed: the run stops here
            raise Interrupted(self.caught)
        self.armed = True

    def disarm(self) -> None:
        self.armed = False


@dataclass
class RunResult:
    run_dir: Path
    outcome: str  # completed | interrupted | error
    verdict: dict | None
    error: str | None = None
    stop_requested: bool = False  # a Ctrl-C, SIGTERM or SIGHUP came once the run had nothing left to stop
    bad_input: bool = False  # it broke on bad input only running could find (credentials the cluster refused)

    @property
    def stopped(self) -> bool:
        """Whoever runs runs in a row (suite, compare, capacity, shrink) stops after this one."""
        return self.outcome == "interrupted" or self.stop_requested

    @property
    def exit_code(self) -> int:
        if self.outcome == "interrupted":
            return EXIT_INTERRUPTED
        if self.outcome != "completed" or self.verdict is None:
            return EXIT_BAD_INPUT if self.bad_input else EXIT_RUN_ERROR
        return EXIT_FOR_VERDICT[self.verdict["status"]]


class Run:
    def __init__(
        self,
        scenario: Scenario,
        scenario_path: Path,
        runs_dir: Path,
        report: Report,
        progress: Callable[[str, float, float], None] | None = None,
        pool: ClusterPool | None = None,
        detail: Report | None = None,
        scenario_text: str | None = None,
    ):
        self.scenario = scenario
        # what only -v shows: each process started, each that exited
        self.detail = (lambda message: detail(redact_text(message))) if detail else (lambda _message: None)
        self.scenario_path = scenario_path
        # what the run directory keeps as scenario.yaml: the file as written, or (`run --set …`) the
        # scenario it was made into (harness.scenario.overrides.scenario_text)
        self.scenario_text = scenario_text
        self.report = lambda message: report(redact_text(message))  # no secret value on the console
        self.progress = progress or (lambda _phase, _done, _total: None)
        self.run_dir = new_stamped_dir(runs_dir, scenario.run_name)
        point_latest(self.run_dir)  # runs_dir/latest: the newest run
        self.schedule = scenario.schedule()
        # A pool lends this run a cluster other runs use too, unless the run cannot share one.
        self.pool = (
            pool
            if pool
            and not unshareable(scenario.cluster.backend, cluster_spec(scenario), {f["kind"] for f in self.schedule})
            else None
        )
        if scenario.cluster.external or self.pool:  # a shared cluster: the run's topics and group carry its id
            self.scenario = scenario = scenario.isolated(scenario.isolation_prefix(self.run_dir.name))
        self.history_path = self.run_dir / "history.jsonl"
        self.history = HistoryWriter(self.history_path, "harness")
        client = run_client(scenario)
        self.client = str(client) if client else None  # run_started.client and run.json's: the members' release
        self.timings: dict[str, float] = {}
        self.supervisor = Supervisor(owner=run_owner(self.run_dir), on_start=self._on_start, on_exit=self._on_exit)
        self.stop_signal = RunStop()  # the run's Ctrl-C, SIGTERM and SIGHUP (execute installs it)
        self.cluster: ClusterBackend | None = None
        self.workload: WorkloadProcesses | None = None
        self.observer: Observer | None = None
        self.scheduler: FaultScheduler | None = None
        self.triggers: TriggerWatcher | None = None
        self._following = False  # the group's size follows the load profile (scenario `load`)
        self._coordinator_logs: dict[str, tuple[CoordinatorLog, HistoryWriter]] = {}
        self._coordinator_read = 0.0  # when the brokers' logs were last read
        self.bad_input = False  # the run stopped on bad input found only once it ran (credentials refused)
        self._coordinator_lock = threading.Lock()  # read by the run, and by the fault triggers waiting on them

    # --------------------------------------------------------------- events

    def _on_start(self, proc) -> None:
        # A Kafka node's release (``kafka``), as its service gave it at this start (ManagedProcess.meta).
        meta = getattr(proc, "meta", {})
        self.history.emit(ev.PROCESS_STARTED, process=proc.name, role=proc.role, pid=proc.pid, **meta)
        self.detail(f"started {proc.name} ({proc.role}, pid {proc.pid})")

    def _on_exit(self, proc, code) -> None:
        escalated = getattr(proc, "escalated_after_ms", None)  # a container's record has none
        extra = {ev.ESCALATED_AFTER_MS: escalated} if escalated is not None else {}
        self.history.emit(ev.PROCESS_EXITED, process=proc.name, role=proc.role, pid=proc.pid, returncode=code, **extra)
        self.detail(f"{proc.name} (pid {proc.pid}) exited with code {code}")

    def _phase(self, phase: str, **fields) -> None:
        self.history.emit(ev.PHASE, phase=phase, **fields)
        self.timings[phase] = time.monotonic()
        self.report(f"phase: {phase}" + (f" ({fields['reason']})" if fields.get("reason") else ""))

    def _components(self) -> dict[str, str | None]:
        """run.json's ``components``: the versions of what this run used (harness/components/inventory.py)."""
        return inventory.run_components(
            kafka=self.scenario.cluster.recorded_kafka,
            metadata_mode=self.scenario.cluster.recorded_metadata,
            client=self.client,
            toxiproxy=bool(self.cluster and getattr(self.cluster, "toxiproxy", None)),
            history=self.history_path,
            message_proxy=bool(self.cluster and getattr(self.cluster, "message_proxy", None)),
        )

    def _state(self, state: str, **extra) -> None:
        write_json_atomically(
            self.run_dir / RUN_STATE,
            {
                "state": state,
                "harness_version": inventory.harness_version(),
                "scenario": self.scenario.name,
                "seed": self.scenario.seed,
                "run_dir": str(self.run_dir),
                "plugins": extensions.recorded(),
                "client": self.client,
                "kafka": self.scenario.cluster.recorded_kafka,
                "metadata": self.scenario.cluster.recorded_metadata,
                **extra,
            },
        )

    # --------------------------------------------------------------- the run

    def execute(self) -> RunResult:
        stop = self.stop_signal
        with handled_by(stop):  # a Ctrl-C before this is a KeyboardInterrupt, as anywhere before a run
            # As given, but never a secret value (runtime.secrets): "***" in its place.
            text = redacted_scenario_text(self.scenario_path) if self.scenario_text is None else self.scenario_text
            (self.run_dir / "scenario.yaml").write_text(redact_text(text))
            (self.run_dir / "schedule.json").write_text(json.dumps(self.schedule, indent=2, sort_keys=True) + "\n")
            self._state("running", started=datetime.now(UTC).isoformat(), components=self._components())
            outcome, error, verdict, summary = "error", None, None, ""
            try:
                try:
                    stop.arm()
                    outcome, error = self._run()  # disarms for the teardown
                    if outcome == "completed":
                        stop.arm()  # a Ctrl-C during the teardown stops the run here, unjudged
                        verdict = self._judge()
                        expected = self.scenario.expect.run_line(outcome, verdict) if self.scenario.expect else None
                        summary = reporting.summary_markdown(verdict, self.run_dir, expected)
                finally:
                    stop.disarm()  # the run's last words must not be cut short by a second Ctrl-C
            except (KeyboardInterrupt, Interrupted):
                verdict = None  # judged or not, an interrupted run has no verdict (`check` gives it)
                if outcome == "completed":  # the history is whole: `check` can judge it
                    error = f"interrupted before its verdict; `rebalance-lab check {self.run_dir}` judges it"
                elif not self.timings:  # as its handlers went in
                    error = "interrupted before the run began"
                outcome = "interrupted"
                if error:
                    self.report(error)
            except HistoryError as e:  # what the run's own processes wrote is not a history to judge
                outcome, error, verdict = "error", f"the run wrote a broken history: {e}", None
                self.report(f"run failed: {error}")
            except Exception as e:  # a check that raises is in the verdict already: this is a bug around the oracle
                outcome, error, verdict = "error", self._harness_bug(e, "judging"), None
            finally:
                self._state(
                    outcome,
                    error=error,
                    **({"verdict": verdict["status"]} if verdict else {}),
                    **({"shared_cluster": self.cluster.pooled.runs} if self.pool and self.cluster else {}),
                    phases={k: round(v - self.timings.get("start", v), 3) for k, v in self.timings.items()},
                    components=self._components(),
                )
                if verdict:
                    (self.run_dir / "summary.md").write_text(summary)
                    write_json_atomically(self.run_dir / "verdict.json", verdict)  # last: the run is judged
        return RunResult(
            self.run_dir,
            outcome,
            verdict,
            error,
            stop_requested=outcome != "interrupted" and bool(stop.caught),
            bad_input=self.bad_input and verdict is None,
        )

    def _run(self) -> tuple[str, str | None]:
        """The run's phases, then its teardown whatever happened in them: (outcome, error)."""
        outcome, error = "error", None
        try:
            try:
                self._run_phases()
            finally:
                # From here a Ctrl-C waits for the teardown (RunStop): cut short, it would leave processes
                # behind. One that came just before is raised here and taken below.
                self.stop_signal.disarm()
            outcome = "completed"
        except (KeyboardInterrupt, Interrupted):
            outcome = "interrupted"
            self.report("interrupted: healing faults and stopping every process …")
        except LabError as e:
            error = str(e)
            if isinstance(e, AuthenticationFailed):  # the credentials given are bad input, not a broken run
                self.bad_input = True
            self.report(f"run failed: {e}")
        except Exception as e:
            error = self._harness_bug(e, "the run")
        finally:
            try:
                self._teardown(interrupted=outcome == "interrupted")
            except LabError as e:  # e.g. an external cluster's topics could not be deleted: said, not a bug
                # The history is whole: a completed run is still judged; the first error is kept.
                error = error or f"teardown: {e}"
                self.report(f"teardown: {e}")
            except Exception as e:
                outcome, error = "error", self._harness_bug(e, "teardown")
            self.history.emit(ev.RUN_FINISHED, outcome=outcome, **({"error": error} if error else {}))
        return outcome, error

    def _harness_bug(self, e: Exception, during: str) -> str:
        """A bug of ours: the traceback stays with the run (harness-error.txt), not on the terminal."""
        with open(self.run_dir / "harness-error.txt", "a") as f:
            f.write(f"during {during}:\n{traceback.format_exc()}\n")
        error = f"{type(e).__name__} during {during}: {e} (traceback in harness-error.txt)"
        self.report(f"run failed: {error}")
        return error

    def _run_phases(self) -> None:
        s = self.scenario
        clean_up_after_dead_harnesses(f"the start of run {self.run_dir.name}", self.report)
        # A client release's first use installs its environment, here, before the run's clock starts.
        client_envs.member_python(run_client(s), self.report)
        for f in s.faults:  # and a rolling client upgrade's, not in the middle of its round
            for requirement in f.client_requirements():
                client_envs.member_python(client_envs.requirement_of(requirement), self.report)
        self.timings["start"] = time.monotonic()
        wall, mono = now()
        members = s.workload.member_names()
        self.history.emit(
            ev.RUN_STARTED,
            format_version=ev.FORMAT_VERSION,
            run_id=self.run_dir.name,
            scenario=s.name,
            seed=s.seed,
            topics=[{"topic": t.name, "partitions": t.partitions} for t in s.topics if s.subscribes(t.name)],
            topic_pattern=s.workload.topic_pattern,
            subscriptions=subscriptions_record(s),
            broker_racks=s.cluster.broker_rack_map(),
            group=s.workload.group,
            protocol=s.workload.protocol,
            assignor=s.workload.effective_assignor,
            members=members,
            checks=s.checks or {},
            backend=s.cluster.backend,
            kafka=s.cluster.recorded_kafka,
            metadata=s.cluster.recorded_metadata,
            group_settings=group_settings(s),
            plugins=extensions.recorded(),
            client=self.client,
            faults=self.schedule,
            clock_offset_ms=round(wall - mono, 3),
        )
        if self.pool:
            self.cluster = self.pool.lease(s.cluster.backend, cluster_spec(s), self.supervisor, self.report)
            (self.run_dir / "cluster").symlink_to(self.cluster.workdir.resolve())  # its logs, as if the run's own
        else:
            self.cluster = open_cluster(
                s.cluster.backend,
                cluster_spec(s, self.history_path),
                self.run_dir / "cluster",
                self.supervisor,
                self.report,
            )
        self.cluster.start()
        self.timings["cluster_ready"] = time.monotonic()

        workload = self.workload = WorkloadProcesses(
            s, self.run_dir, self.cluster, self.supervisor, self.report, history_writer=self.history
        )
        self.observer = self._observer()
        self.observer.start()
        observer = self.observer.status
        targets = RunTargets(self.cluster, workload, self.observer, self.history)
        faults = [from_spec(f) for f in self.schedule]
        self.scheduler = FaultScheduler(
            faults, targets, HistoryWriter(self.history_path, "fault").emit, self.report, run_started_mono_ms=mono
        )
        self.triggers = TriggerWatcher(
            self.history_path, self.scheduler, faults, s.workload.group, refresh=self._record_coordinator_events
        )

        if workload.on_workers:  # the members' hosts come with Locust's workers: Locust first
            workload.start_load()
        workload.start_all()
        self._warm_up(observer)
        if s.load:  # from here Locust's user count is the group's size, until the run is done
            if not workload.on_workers:
                workload.start_load()
            self._following = True
        self.scheduler.start()
        self.triggers.start()
        self._wait("workload", s.duration_s, lambda: False)
        # Locust's clock started a moment after the workload's: the workload lasts until its profile is over.
        if s.load and not self._wait("profile", PROFILE_GRACE_S, workload.load.profile_over):
            self.report(f"Locust's profile was not over {PROFILE_GRACE_S}s after duration_s; the run goes on")

        self.triggers.stop()
        self.scheduler.heal_all("end-of-workload")
        workload.producer.kill(signal.SIGTERM)  # flushes and records its last acknowledgements
        self._phase("recovery")

        # A load run is at rest when stable with every member it runs and no other: the profile's last
        # change may start members a moment before the workload ends, and they join after they have
        # started (a KIP-848 run was judged with a partition moving to a member that joined at teardown);
        # a static member it stopped stays in the group, with its partitions, until its session expires
        # (a classic-static capacity point was judged 4 s after its last member left, and never settled).
        # Other runs take the broker's word alone: a zk-eager member paused past its session re-registers
        # on its own schedule.
        def at_rest() -> bool:
            if not s.load:
                return observer.is_stable()
            workload.reap_leavers()  # one stuck in its close would keep the group from being exactly its members
            return observer.formed(workload.members_staying(), exactly=True)

        stable = self._wait("recovery", s.recovery.timeout_s, _stable_for(at_rest, s.recovery.stable_for_s))
        self._phase("drain", **({} if stable else {"reason": f"group not stable after {s.recovery.timeout_s:.0f}s"}))
        drained = self._wait("drain", s.recovery.timeout_s, observer.drained)
        self._phase("done", **({} if drained else {"reason": f"lag not drained after {s.recovery.timeout_s:.0f}s"}))
        if s.load:  # Locust tells its last rebalances once it reads `done`, writes its CSV files and quits
            self._following = False
            if not self._wait("load", LOCUST_QUIT_S, lambda: not workload.load.running()):
                self.report(f"Locust did not quit within {LOCUST_QUIT_S}s of done; stopped with the clients")

    def _warm_up(self, observer: ObserverStatus) -> None:
        """Start the fault clock (the ``workload`` phase) once the initial members have formed the group."""
        w = self.scenario.workload
        members = w.member_names()
        if w.warmup == "none" or not members:
            self._phase("workload")
            return
        self._phase("warmup", members=members)
        formed = self._wait("warmup", w.warmup_timeout_s, lambda: observer.formed(members))
        self._phase("workload", **({} if formed else {"reason": f"group not formed after {w.warmup_timeout_s:.0f}s"}))

    def _observer(self) -> Observer:
        s = self.scenario
        spec = ObserverSpec(
            history=str(self.history_path),
            status_file=str(self.run_dir / "observer.status.json"),
            bootstrap_servers=self.cluster.bootstrap_servers,
            group=s.workload.group,
            topics=[] if s.workload.topic_pattern else s.consumed_topics,
            topic_pattern=s.workload.topic_pattern,
            subscriptions_file=str(self.workload.subscriptions_file) if s.workload.subscriptions else None,
            # a group kept in ZooKeeper (zk-eager's): the observer reads it there.
            zookeeper_connect=self.cluster.zookeeper_connect
            if s.workload.generation.group_home == "zookeeper"
            else None,
            # the project's coordinator keeps the group: the observer asks it, directly.
            coordinators=self.cluster.coordinator_addresses() or None,
            client_settings=dict(s.cluster.client_config),
            describe_by_own_request=bool(
                s.workload.generation.group_protocol == "consumer"
                and s.cluster.release
                and s.cluster.release.consumer_group_describe_unstable
            ),
        )
        return Observer("observer", self.supervisor, self.run_dir, spec)

    def _wait(self, phase: str, seconds: float, done: Callable[[], bool]) -> bool:
        """Wait up to ``seconds`` for ``done()``, noting processes that exit on their own."""
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < seconds:
            self.progress(phase, elapsed, seconds)
            for name in self.cluster.poll_exits() if self.cluster else ():
                self.report(f"{name} exited")
            for proc in self.supervisor.poll_exits():
                self.report(f"{proc.name} exited with code {proc.popen.returncode}")
                if proc.role == MessageProxyKind.role:  # every message fault's effect went with it
                    raise ClusterError(
                        f"the message proxy exited with code {proc.popen.returncode} while the run went on: "
                        f"the run is broken, not a member (its log: {proc.log_path})"
                    )
                if self.observer and proc.name == self.observer.name:  # it may give up; it is only a witness
                    self.observer.start()
            if self._following:
                self._follow_load()
            if time.monotonic() - self._coordinator_read >= COORDINATOR_LOG_EVERY_S:
                self._coordinator_read = time.monotonic()
                self._record_coordinator_events()
            if done():
                self.progress(phase, seconds, seconds)
                return True
            time.sleep(0.5)
        self.progress(phase, seconds, seconds)
        return False

    def _follow_load(self) -> None:
        """The group at the size Locust's profile has now (it writes its user count on each change)."""
        load = self.workload.load
        wanted = load.members_wanted()
        if wanted is not None:
            self.workload.follow(
                wanted,
                lambda started, stopped: self.history.emit(
                    ev.GROUP_RESIZED, members=wanted, started=started, stopped=stopped
                ),
            )
        elif not load.running():
            raise LabError(f"Locust exited before it ran the load profile (its log: {load.logs['stdout']})")

    def _teardown(self, interrupted: bool) -> None:
        if self.triggers:
            self.triggers.stop()
        if self.scheduler:
            self.scheduler.heal_all("end-of-run")
        if self.cluster:
            self._check_healed()
        # The clients first (their LeaveGroups reach a live cluster), then the cluster, tier by tier.
        stop_in_order(
            [*(self.workload.services.values() if self.workload else ()), *([self.observer] if self.observer else [])]
        )
        if self.workload:
            self.workload.close()
        try:
            if self.cluster and self.pool:  # a shared cluster: handed back, or stopped if the run was cut short
                self.cluster.stop(interrupted)
            elif self.cluster:
                self.cluster.stop()
        finally:
            self.supervisor.stop_all()  # anything no service owns (none expected)
        if self.cluster:
            self._record_coordinator_events()  # the rest: the teardown's own rebalances
            self._check_broker_logs_recognised()
        for _, writer in self._coordinator_logs.values():
            writer.close()

    def _check_healed(self) -> None:
        """Record that healing worked — no proxy keeps a toxic or is disabled, no process is
        stopped — and force it where it did not."""
        stopped = sorted(n for n, p in self.supervisor.processes.items() if p.running() and process_state(p.pid) == "T")
        for name in stopped:
            self.supervisor.resume(name)
        # A shared cluster's services are not the run's processes (the pool's supervisor has them).
        borrowed = sorted(
            n
            for n, svc in self.cluster.services.items()
            if n not in self.supervisor.processes and svc.running() and svc.paused()
        )
        for name in borrowed:
            self.cluster.services[name].resume()
        stopped = sorted(stopped + borrowed)
        proxies = []
        if self.cluster.toxiproxy:
            try:
                proxies = self.cluster.toxiproxy.proxies()
                if any(p.toxics or not p.enabled for p in proxies):
                    network.reset(self.cluster.toxiproxy)
            except Exception as e:  # Toxiproxy itself may be what a fault broke
                self.report(f"could not check Toxiproxy: {e}")
        message_rules = []
        if getattr(self.cluster, "message_proxy", None):
            try:
                message_rules = self.cluster.message_proxy.rules()
                if message_rules:
                    self.cluster.message_proxy.reset()
            except Exception as e:  # the message proxy may be gone: the run is broken then anyway
                self.report(f"could not check the message proxy: {e}")
        self.history.emit(
            ev.HEAL_CHECKED,
            stopped_processes=stopped,
            proxies=len(proxies),
            proxies_with_toxics=sorted(p.name for p in proxies if p.toxics),
            proxies_disabled=sorted(p.name for p in proxies if not p.enabled),
            **({"message_rules": sorted(message_rules)} if getattr(self.cluster, "message_proxy", None) else {}),
        )

    def _record_coordinator_events(self) -> None:
        """Append the brokers' new GroupCoordinator lines as coordinator events (docs/history.md),
        as the run goes: what reads the live history (a load run's Locust) sees the brokers' view too."""
        with self._coordinator_lock:
            self._read_coordinator_logs()

    def _read_coordinator_logs(self) -> None:
        wall, mono = now()
        offset = wall - mono
        for broker in self.cluster.broker_names():
            if broker not in self._coordinator_logs:
                log = CoordinatorLog(self.cluster.services[broker].logs["server"], broker, self.scenario.workload.group)
                self._coordinator_logs[broker] = log, HistoryWriter(self.history_path, broker)
            log, writer = self._coordinator_logs[broker]
            for ts, name, fields in log.new_events():
                writer.emit(name, ts=ts, mono_ms=ts - offset, clock=BROKER_LOG_CLOCK, **fields)

    def _check_broker_logs_recognised(self) -> None:
        """A group whose members were given partitions was formed by a coordinator that logged it:
        if none of the brokers' lines the run needs were recognised (another release's wording),
        the history says so and the run is INCOMPLETE, not judged from half its events."""
        s = self.scenario
        protocol = s.workload.generation.group_protocol
        if s.cluster.external or s.workload.generation.group_home != "kafka" or protocol is None:
            return
        if not self._coordinator_logs or not _members_were_assigned(self.history_path):
            return
        seen = set().union(*(log.seen for log, _ in self._coordinator_logs.values()))
        missing = brokerlog.missing_lines(protocol, s.workload.group, seen)
        if missing:
            log_unrecognised(self.history, f"server logs of the brokers, Kafka {s.cluster.kafka}", missing)
            self.report(f"not recognised in the brokers' logs (Kafka {s.cluster.kafka}): {missing}")
            # Some of their lines that named the group and gave nothing: the wording to teach brokerlog.py.
            for log, _ in self._coordinator_logs.values():
                for line in log.unrecognised:
                    self.report(f"  {log.broker}: {line[:300]}")

    def _judge(self) -> dict:
        verdict = check_history(
            load_history(self.history_path, compact_events=True), self.scenario.checks or {}
        ).to_dict()
        return {"run_id": self.run_dir.name, "scenario": self.scenario.name, "seed": self.scenario.seed, **verdict}


def cluster_spec(s: Scenario, history: Path | None = None) -> ClusterSpec:
    """What the scenario asks of the cluster (``history``: where the project's coordinator writes its events)."""
    return ClusterSpec(
        kafka=s.cluster.kafka,
        metadata=s.cluster.metadata,
        brokers=s.cluster.brokers,
        zookeeper_nodes=s.cluster.zookeeper_nodes,
        broker_config=s.broker_config(),
        topics=[TopicSpec(t.name, t.partitions, t.replication_factor, dict(t.config)) for t in s.topics],
        lanes=s.lane_plan.lanes,
        broker_racks=tuple(s.cluster.broker_racks or ()),
        broker_heap_mb=s.cluster.broker_heap_mb,
        coordinator=_project_coordinator(s, history),
        message_proxy=MessageProxySpec(frozenset(range(1, s.lane_plan.lanes + 1)), history and str(history))
        if s.needs(Capability.MESSAGE_LANES)
        else None,
        external=ExternalTarget(
            s.cluster.bootstrap_servers,
            s.cluster.zookeeper_connect,
            dict(s.cluster.client_config),
            s.workload.group,
            s.workload.session_timeout_ms / 1000 + 30,
        )
        if s.cluster.external
        else None,
    )


def subscriptions_record(s: Scenario) -> list[dict] | None:
    """run_started.subscriptions: the workload's entries and the members started with each."""
    w = s.workload
    if not w.subscriptions:
        return None
    return [
        {
            "name": e.name,
            "topics": list(e.topics),
            "members": [m for i, m in enumerate(w.member_names(), 1) if w.subscription_of(i) is e],
        }
        for e in w.subscriptions
    ]


def group_settings(s: Scenario) -> dict:
    """What the group's coordinator does that the history alone does not say, for the oracle's
    explanations and the reader (run_started.group_settings, docs/history.md); None where the
    harness cannot know."""
    w = s.workload
    # the brokers' bounds on the group's size in effect (Kafka's, by its own setting names)
    limits = {"group_size_limits": s.group_size_limits() if w.generation.group_home == "kafka" else None}
    if w.generation.project_coordinator:
        delay = variant(w.generation.coordinator_variant, w.coordinator.initial_rebalance_delay_ms)
        return {"initial_rebalance_delay_ms": delay.initial_rebalance_delay_ms, **limits}
    if s.cluster.external or not w.generation.classic:  # someone else's brokers; KIP-848 has no such delay
        return {"initial_rebalance_delay_ms": None, **limits}
    return {
        "initial_rebalance_delay_ms": int(
            s.broker_config().get("group.initial.rebalance.delay.ms", INITIAL_REBALANCE_DELAY_MS)
        ),
        **limits,
    }


def _project_coordinator(s: Scenario, history: Path | None) -> ProjectCoordinator | None:
    w = s.workload
    if not w.generation.project_coordinator:
        return None
    return ProjectCoordinator(
        variant=w.generation.coordinator_variant,
        instances=w.coordinator.instances,
        initial_rebalance_delay_ms=w.coordinator.initial_rebalance_delay_ms,
        zookeeper_session_timeout_ms=w.coordinator.zookeeper_session_timeout_ms,
        history=str(history) if history else None,
    )


def _stable_for(stable: Callable[[], bool], seconds: float) -> Callable[[], bool]:
    since: list[float | None] = [None]

    def check() -> bool:
        if not stable():
            since[0] = None
            return False
        since[0] = since[0] or time.monotonic()
        return time.monotonic() - since[0] >= seconds

    return check


def _members_were_assigned(history_path: Path) -> bool:
    """Whether any member of the run was given partitions (then its coordinator logged the group)."""
    needle = f'{{"name":"{ev.PARTITIONS_ASSIGNED}",'.encode()  # HistoryWriter's lines begin with the name
    with open(history_path, "rb") as f:
        return any(line.startswith(needle) for line in f)
