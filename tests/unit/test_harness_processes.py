"""harness/supervision/processes.py with real short-lived processes (`sleep 30`) and a temporary registry."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness.supervision.processes import (
    Supervisor,
    cleanup_leftovers,
    proc_start_time,
    process_state,
    registered,
)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "home"))
    started: dict[int, int | None] = {}

    def track(pid: int) -> int:
        started[pid] = proc_start_time(pid)
        return pid

    yield tmp_path / "home", track
    for pid, start_time in started.items():  # what a failed test left behind: by pid, if still the same process
        if start_time is not None and proc_start_time(pid) == start_time and process_state(pid) != "Z":
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def gone(pid: int) -> bool:
    return process_state(pid) in (None, "Z")


def orphan(home: Path, tmp_path: Path, owner: str = "run", pause: bool = False) -> int:
    """Start `sleep 30` from a child harness that exits without tearing down (as if it crashed)."""
    script = textwrap.dedent(f"""
        from pathlib import Path
        import harness.supervision.processes
        from harness.supervision.processes import Supervisor
        harness.supervision.processes.ensure_watchdog = lambda: None  # as if its watchdog died with it: what `cleanup` is for
        sup = Supervisor(owner={owner!r})
        p = sup.start("consumer-1", "consumer", ["sleep", "30"], Path({str(tmp_path / "orphan.log")!r}))
        if {pause!r}:
            sup.pause("consumer-1")
        print(p.pid)
    """)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, "REBALANCE_LAB_HOME": str(home), "PYTHONPATH": str(REPO)},
    )
    return int(out.stdout)


def test_start_pause_resume_kill(home, tmp_path):
    _, track = home
    seen = []
    sup = Supervisor(
        owner="run",
        on_start=lambda p: seen.append(("start", p.name)),
        on_exit=lambda p, code: seen.append(("exit", p.name, code)),
    )
    proc = sup.start("consumer-1", "consumer", ["sleep", "30"], tmp_path / "logs" / "consumer-1.log", group="g")
    track(proc.pid)
    entry = json.loads(proc.registration.read_text())
    assert proc.registration.name == f"{proc.pid}.json"
    assert entry["pid"] == proc.pid and entry["name"] == "consumer-1" and entry["role"] == "consumer"
    assert entry["start_time"] == proc_start_time(proc.pid) and entry["owner_pid"] == os.getpid()
    assert os.getpgid(proc.pid) == proc.pid  # own session, own group
    assert (tmp_path / "logs" / "consumer-1.log").exists()

    sup.pause("consumer-1")
    wait_until(lambda: process_state(proc.pid) == "T")
    assert proc.paused
    sup.resume("consumer-1")
    wait_until(lambda: process_state(proc.pid) == "S")

    assert sup.kill("consumer-1") == -signal.SIGKILL
    assert not proc.registration.exists() and gone(proc.pid)
    assert seen == [("start", "consumer-1"), ("exit", "consumer-1", -signal.SIGKILL)]


def test_a_registered_process_that_exited_unreaped_says_so(home, tmp_path):
    """`cluster status` tells a zombie (killed, its parent not yet waiting for it) from a running process."""
    _, track = home
    sup = Supervisor(owner="run")
    proc = sup.start("broker-1", "broker", ["sleep", "30"], tmp_path / "b.log")
    track(proc.pid)
    [entry] = registered()
    assert entry.state in ("R", "S") and not entry.stopped  # running or sleeping: R if it has not yet slept
    os.killpg(proc.pid, signal.SIGKILL)  # behind the supervisor's back: nobody reaps it yet
    wait_until(lambda: process_state(proc.pid) == "Z", timeout=30)
    [entry] = registered()
    assert (entry.name, entry.state, entry.stopped) == ("broker-1", "Z", False)
    sup.stop_all()
    assert registered() == []


def test_kill_with_sigterm_resumes_a_paused_process_first(home, tmp_path):
    _, track = home
    sup = Supervisor()
    proc = sup.start("consumer-1", "consumer", ["sleep", "30"], tmp_path / "c.log")
    track(proc.pid)
    sup.pause("consumer-1")
    wait_until(lambda: process_state(proc.pid) == "T")
    assert sup.kill("consumer-1", signal.SIGTERM, timeout=5) == -signal.SIGTERM


def test_poll_exits_reports_a_process_that_ended_on_its_own_once(home, tmp_path):
    codes = []
    sup = Supervisor(on_exit=lambda p, code: codes.append((p.name, code)))
    proc = sup.start("producer", "producer", ["sh", "-c", "exit 3"], tmp_path / "p.log")
    proc.popen.wait(timeout=5)
    assert [p.name for p in sup.poll_exits()] == ["producer"]
    assert sup.poll_exits() == []
    assert codes == [("producer", 3)] and not proc.registration.exists()


def leader_and_child(tmp_path: Path, then: str) -> list[str]:
    """A leader that starts `sleep 30` in its group, writes both pids, then `then`."""
    return ["sh", "-c", f"sleep 30 & echo $$ $! > {tmp_path / 'pids'}; {then}"]


def pids(tmp_path: Path, timeout: float = 5.0) -> list[int]:
    wait_until(lambda: (tmp_path / "pids").exists() and (tmp_path / "pids").read_text().endswith("\n"), timeout)
    return [int(p) for p in (tmp_path / "pids").read_text().split()]


def test_run_returns_the_exit_code_and_kills_what_the_leader_left_behind(home, tmp_path):
    codes = []
    sup = Supervisor(owner="setup", on_exit=lambda p, code: codes.append((p.name, code)))
    assert sup.run("mvn", "setup", leader_and_child(tmp_path, "exit 3"), tmp_path / "mvn.log", timeout=10) == 3
    leader, child = pids(tmp_path)
    wait_until(lambda: gone(child))  # SIGKILLed with its group, not left to finish its 30 s
    assert gone(leader) and codes == [("mvn", 3)] and registered() == []


@pytest.mark.parametrize("way_out", ["timeout", "ctrl-c"])
def test_run_kills_the_whole_group_on_the_way_out(home, tmp_path, way_out, as_from_a_terminal):
    sup = Supervisor(owner="setup")
    if way_out == "ctrl-c":  # a KeyboardInterrupt while it waits, as the `setup` command gets one

        def interrupt():
            pids(tmp_path)  # once both are running
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            sup.run("go-install", "setup", leader_and_child(tmp_path, "wait"), tmp_path / "go.log")
    else:  # long enough for `sh` to start its child even on a loaded machine
        with pytest.raises(subprocess.TimeoutExpired):
            sup.run("go-install", "setup", leader_and_child(tmp_path, "wait"), tmp_path / "go.log", timeout=10)
    leader, child = pids(tmp_path)
    wait_until(lambda: gone(leader) and gone(child))
    assert registered() == []


def test_an_error_before_the_process_is_on_record_kills_it(home, tmp_path, monkeypatch):
    """Between Popen and the registration nothing else knows of the process: on an error there
    (a full disk) start() stops it itself."""
    import harness.supervision.processes as processes

    leaders, real = [], processes.proc_start_time

    def failing(pid: int):
        if not leaders:
            leaders.append(home[1](pid))
            raise OSError(28, "No space left on device")
        return real(pid)

    monkeypatch.setattr(processes, "proc_start_time", failing)
    sup = Supervisor(owner="setup")
    with pytest.raises(OSError):
        sup.start("mvn", "setup", ["sleep", "30"], tmp_path / "mvn.log")
    assert gone(leaders[0]) and registered() == [] and sup.processes == {}


@pytest.mark.parametrize("how", ["start", "run"])
def test_a_ctrl_c_inside_popen_waits_until_the_process_is_on_record(
    home, tmp_path, monkeypatch, how, as_from_a_terminal
):
    """A Ctrl-C that lands while Popen returns (CI saw one land between Popen and the table, on
    a loaded machine: the group outlived the harness) takes effect once the process is in the
    table and registered — where the caller's teardown finds it."""
    import harness.supervision.processes as processes

    real_popen, leaders = subprocess.Popen, []

    def interrupted_popen(*args, **kwargs):
        popen = real_popen(*args, **kwargs)
        leaders.append(home[1](popen.pid))
        os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode, still inside the window
        return popen

    monkeypatch.setattr(processes.subprocess, "Popen", interrupted_popen)
    sup = Supervisor(owner="setup")
    with pytest.raises(KeyboardInterrupt):
        if how == "start":
            sup.start("mvn", "setup", ["sleep", "30"], tmp_path / "mvn.log")
        else:
            sup.run("mvn", "setup", ["sleep", "30"], tmp_path / "mvn.log")
    [leader] = leaders
    if how == "start":  # on record, for the caller's teardown
        assert sup.get("mvn").pid == leader and [r.pid for r in registered()] == [leader]
        sup.stop_all()
    wait_until(lambda: gone(leader))
    assert registered() == []


def test_a_ctrl_c_while_the_start_is_told_still_kills_the_group_run_started(home, tmp_path):
    def told(_proc):
        for pid in pids(tmp_path, timeout=15):  # both running
            home[1](pid)
        raise KeyboardInterrupt

    sup = Supervisor(owner="setup", on_start=told)
    with pytest.raises(KeyboardInterrupt):
        sup.run("go-install", "setup", leader_and_child(tmp_path, "wait"), tmp_path / "go.log")
    leader, child = pids(tmp_path)
    wait_until(lambda: gone(leader) and gone(child))
    assert registered() == []


def test_members_started_from_another_thread_never_break_a_walk_of_the_table(home, tmp_path):
    """The fault scheduler's thread starts members (scale, join storms) while the run's thread
    polls for exits: seen in a real run as "dictionary changed size during iteration"."""
    sup = Supervisor(owner="test")
    done = threading.Event()

    def start_many():
        for i in range(40):
            sup.start(f"member-{i}", "consumer", ["sleep", "0.2"], tmp_path / f"member-{i}.log")
        done.set()

    starter = threading.Thread(target=start_many)
    starter.start()
    try:
        while not done.is_set():
            sup.poll_exits()  # raised RuntimeError before the table was copied on write
    finally:
        starter.join()
        sup.stop_all()
    assert len(sup.processes) == 40


def test_stop_all_terminates_everything_including_paused(home, tmp_path):
    _, track = home
    sup = Supervisor()
    for name in ("broker-1", "consumer-1"):
        track(sup.start(name, name.split("-")[0], ["sleep", "30"], tmp_path / f"{name}.log").pid)
    sup.pause("consumer-1")
    wait_until(lambda: process_state(sup.get("consumer-1").pid) == "T")
    sup.stop_all([["consumer"], ["broker-1"]], timeout=5)
    assert [p.popen.returncode for p in sup.processes.values()] == [-signal.SIGTERM, -signal.SIGTERM]
    assert registered() == []


def test_cleanup_kills_what_a_dead_harness_left_and_resumes_it_first(home, tmp_path):
    lab_home, track = home
    pid = orphan(lab_home, tmp_path, pause=True)
    track(pid)
    wait_until(lambda: process_state(pid) == "T")
    mine = Supervisor().start("consumer-2", "consumer", ["sleep", "30"], tmp_path / "mine.log")
    track(mine.pid)

    victims = cleanup_leftovers()  # by default only processes whose harness is gone
    assert [(v.pid, v.name, v.stopped) for v in victims] == [(pid, "consumer-1", True)]
    assert gone(pid) and not (lab_home / "processes" / f"{pid}.json").exists()
    assert mine.running() and mine.registration.exists()

    victims = cleanup_leftovers(include_live_owners=True)
    assert [v.pid for v in victims] == [mine.pid]
    mine.popen.wait(timeout=5)
    assert mine.popen.returncode == -signal.SIGKILL and not mine.registration.exists()


def test_cleanup_leaves_a_detached_cluster_unless_asked(home, tmp_path):
    lab_home, track = home
    pid = orphan(lab_home, tmp_path, owner="cluster:/somewhere")
    track(pid)
    assert cleanup_leftovers(include_detached=False) == []
    assert not gone(pid)
    assert [v.pid for v in cleanup_leftovers(include_detached=True)] == [pid]
    assert gone(pid)


def test_a_recycled_pid_is_never_killed(home, tmp_path):
    lab_home, track = home
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    track(stranger.pid)
    registration = lab_home / "processes" / f"{stranger.pid}.json"
    registration.parent.mkdir(parents=True)
    registration.write_text(
        json.dumps(
            {  # our old process had this pid, but started at another time
                "pid": stranger.pid,
                "start_time": proc_start_time(stranger.pid) - 1000,
                "name": "broker-1",
                "role": "broker",
                "owner": "run",
                "owner_pid": -1,
                "owner_start_time": None,
            }
        )
    )
    assert cleanup_leftovers(include_live_owners=True) == []
    assert stranger.poll() is None
    assert not registration.exists()  # forgotten: it was not ours any more
    stranger.kill()
    stranger.wait()


def running_run(tmp_path: Path, name: str, state: str = "running") -> Path:
    run_dir = tmp_path / "runs" / name
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"state": state, "scenario": "s", "seed": 1}))
    return run_dir


def test_cleanup_marks_the_runs_of_dead_harnesses_killed(home, tmp_path):
    from click.testing import CliRunner

    from harness.cli import main
    from harness.supervision.run_state import run_owner

    lab_home, track = home
    killed, finished = running_run(tmp_path, "killed"), running_run(tmp_path, "finished", state="completed")
    pid = track(orphan(lab_home, tmp_path, owner=run_owner(killed), pause=True))
    other = track(orphan(lab_home, tmp_path, owner=run_owner(finished)))
    wait_until(lambda: process_state(pid) == "T")
    alive = running_run(tmp_path, "alive")  # its harness (this test) lives on: it writes its own final state
    mine = Supervisor(owner=run_owner(alive)).start("consumer-2", "consumer", ["sleep", "30"], tmp_path / "mine.log")
    track(mine.pid)

    result = CliRunner().invoke(main, ["cleanup"])
    assert result.exit_code == 0, result.output
    assert gone(pid) and gone(other) and mine.running()
    state = json.loads((killed / "run.json").read_text())
    assert state["state"] == "killed" and state["scenario"] == "s"  # the rest of run.json is kept
    assert state["killed"]["by"] == "rebalance-lab cleanup" and state["killed"]["stopped_at"]
    assert state["killed"]["processes"] == [{"process": "consumer-1", "role": "consumer", "pid": pid, "paused": True}]
    assert json.loads((finished / "run.json").read_text())["state"] == "completed"  # only a `running` run is marked
    assert (
        f"run {killed.resolve()}: killed" in result.output and f"run {finished.resolve()}: completed" in result.output
    )

    cleanup_leftovers(include_live_owners=True, by="a test")  # a live harness's run is never marked
    assert json.loads((alive / "run.json").read_text())["state"] == "running"


def test_the_start_of_a_run_marks_the_runs_it_cleans_up_after(home, tmp_path):
    from harness.supervision.run_state import run_owner

    lab_home, track = home
    killed = running_run(tmp_path, "killed")
    pid = track(orphan(lab_home, tmp_path, owner=run_owner(killed)))
    assert [v.pid for v in cleanup_leftovers(include_detached=False, by="the start of run r2")] == [pid]
    state = json.loads((killed / "run.json").read_text())
    assert state["state"] == "killed" and state["killed"]["by"] == "the start of run r2"


def test_a_run_directory_deleted_since_is_no_error(home, tmp_path):
    import shutil

    from harness.supervision.run_state import run_owner

    lab_home, track = home
    gone_run = running_run(tmp_path, "deleted")
    pid = track(orphan(lab_home, tmp_path, owner=run_owner(gone_run)))
    shutil.rmtree(gone_run)
    assert [v.pid for v in cleanup_leftovers()] == [pid] and gone(pid)


def test_a_sigterm_while_run_kills_the_group_waits_for_the_kill_then_stops_setup(home, tmp_path, monkeypatch):
    """`setup` takes SIGTERM like Ctrl-C; one that comes while run()'s `finally` kills the step's
    group neither cuts the kill short nor is lost: the group goes, then setup gets it."""
    from harness.supervision import processes
    from harness.supervision.stop_signals import like_ctrl_c

    signal_group = processes._signal_group

    def sigterm_then_kill(pid, sig):
        signal.raise_signal(signal.SIGTERM)
        signal_group(pid, sig)

    sup = Supervisor(owner="setup")
    with pytest.raises(KeyboardInterrupt), like_ctrl_c():
        monkeypatch.setattr(processes, "_signal_group", sigterm_then_kill)
        sup.run("mvn", "setup", leader_and_child(tmp_path, "exit 0"), tmp_path / "mvn.log", timeout=10)
    leader, child = pids(tmp_path)
    wait_until(lambda: gone(leader) and gone(child))
    assert registered() == []


def test_a_dead_process_of_a_live_owner_is_left_for_its_owner_to_record(home, tmp_path):
    """Its owner's Supervisor._reap records the exit once, by removing the registration: a
    neighbour's `registered()` that removed it first would lose the process_exited event."""
    lab_home, _ = home
    gone_already = subprocess.Popen(["true"])
    gone_already.wait()
    registration = lab_home / "processes" / f"{gone_already.pid}.json"
    registration.parent.mkdir(parents=True)
    entry = {
        "pid": gone_already.pid,
        "start_time": 1,
        "name": "consumer-1",
        "role": "consumer",
        "owner": "run",
        "owner_pid": os.getpid(),
        "owner_start_time": proc_start_time(os.getpid()),
    }
    registration.write_text(json.dumps(entry))
    assert registered() == [] and registration.exists()
    registration.write_text(json.dumps(entry | {"owner_pid": -1}))  # its owner died: nobody will record it
    assert registered(forget_dead=False) == [] and registration.exists()  # a reader that never writes
    assert registered() == [] and not registration.exists()


def test_the_watchdog_stops_what_a_sigkilled_harness_left_paused_too(home, tmp_path):
    lab_home, track = home
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from harness.supervision.processes import Supervisor
        sup = Supervisor(owner="run:{tmp_path / "run"}")
        p = sup.start("consumer-1", "consumer", ["sleep", "60"], Path({str(tmp_path / "c.log")!r}))
        sup.pause("consumer-1")
        print(p.pid, flush=True)
        time.sleep(60)
    """)
    harness = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "REBALANCE_LAB_HOME": str(lab_home), "PYTHONPATH": str(REPO)},
    )
    pid = track(int(harness.stdout.readline()))
    wait_until(lambda: process_state(pid) == "T")
    harness.kill()  # no teardown at all; and not reaped yet: a zombie harness owns nothing
    wait_until(lambda: gone(pid) and not (lab_home / "processes" / f"{pid}.json").exists(), timeout=10)
    harness.wait()
    wait_until(lambda: "stopped consumer-1" in (lab_home / "watchdog.log").read_text())
    log = (lab_home / "watchdog.log").read_text()
    assert f"the watchdog of harness {harness.pid}: stopped consumer-1 (pid {pid}, consumer, was paused)" in log, log
