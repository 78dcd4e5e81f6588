"""`cluster up|down|status`: a standalone cluster that outlives one command."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click
from rich.markup import escape

from harness.cli.common import (
    CLUSTER_STATE,
    KafkaReleaseType,
    console,
    err_console,
    error,
    fail,
)
from harness.cluster.backend import Cleanup, started_backends
from harness.components import versions
from harness.paths import lab_home, refuse_output_dir
from runtime.errors import (
    EXIT_INTERRUPTED,
    ClusterError,
    LabError,
    SetupError,
)
from runtime.output_dirs import SafePath

# In a standalone cluster's workdir: the directory is the lab's, so `cluster up` may empty it.
CLUSTER_WORKDIR_MARK = ".rebalance-lab-cluster"


@click.group()
def cluster() -> None:
    """Start, inspect and stop a standalone local cluster."""


def _topics(_ctx, _param, values: tuple[str, ...]) -> list[tuple[str, int]]:
    """``--topic NAME[:PARTITIONS]``, held to what a scenario's topic may be."""
    from pydantic import ValidationError

    from faults.topic_names import topic_set_problems
    from harness.scenario import Topic

    topics = []
    for value in values:
        name, _, partitions = value.partition(":")
        try:
            topic = Topic(name=name, partitions=partitions or 1)
        except ValidationError as e:
            raise click.BadParameter(
                f"{value!r}: " + "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
            ) from None
        topics.append((topic.name, topic.partitions))
    for i, reason in topic_set_problems([name for name, _ in topics]):
        raise click.BadParameter(f"{values[i]!r}: {reason}")
    return topics


def _sasl_plain(_ctx, _param, value: str | None):
    """``--sasl-plain USER:VARIABLE``: the user, and the password from the environment variable."""
    import os
    import re

    from harness.cluster.spec import SaslPlainUser

    if value is None:
        return None
    user, _, variable = value.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", user) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
        raise click.BadParameter(
            "USER:VARIABLE: a user name ([A-Za-z0-9._-]) and the name of the environment "
            "variable that holds its password (the password itself is never an argument)"
        )
    password = os.environ.get(variable)
    if not password:
        raise click.BadParameter(f"the environment variable {variable} (the password of {user}) is not set or empty")
    if re.search(r'["\\\r\n]', password):
        raise click.BadParameter(
            f"the password in {variable} has a quote, a backslash or a line break, which a JAAS "
            "configuration cannot hold as written"
        )
    return SaslPlainUser(user, password)


@cluster.command("up")
@click.option("--backend", type=click.Choice(started_backends()), default="local", show_default=True)
@click.option("--kafka", type=KafkaReleaseType(), default=versions.DEFAULT_KAFKA, show_default=True)
@click.option(
    "--metadata",
    type=click.Choice(["zookeeper", "kraft"]),
    default=None,
    help="ZooKeeper or KRaft (default: ZooKeeper on a release that has it, KRaft on 4.x).",
)
@click.option("--brokers", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--zookeeper-nodes", type=click.Choice(["1", "3"]), default="1", show_default=True)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="NAME[:PARTITIONS]",
    callback=_topics,
    help="Topic to create (repeatable).",
)
@click.option("--workdir", type=SafePath(path_type=Path), default=None, help="Default: <lab home>/cluster")
@click.option(
    "--sasl-plain",
    "sasl_plain",
    default=None,
    metavar="USER:VARIABLE",
    callback=_sasl_plain,
    help="Every broker also listens with SASL_PLAINTEXT (mechanism PLAIN) on 127.0.0.1 for USER, whose "
    "password is read from the environment variable VARIABLE (never from the command line, never "
    "printed). Local backend.",
)
def cluster_up(
    backend: str,
    kafka: str,
    metadata: str | None,
    brokers: int,
    zookeeper_nodes: str,
    topics: list[tuple[str, int]],
    workdir: Path | None,
    sasl_plain,
) -> None:
    """Start ZooKeeper (or a KRaft controller), brokers and Toxiproxy; leave them running."""
    from pydantic import ValidationError

    from harness.cluster import ClusterSpec, TopicSpec
    from harness.cluster.backend import BACKENDS, backend_class, open_cluster
    from harness.scenario import Cluster, validation_problems
    from harness.supervision.processes import Supervisor

    if sasl_plain and not backend_class(backend).sasl_plain_listeners:
        able = ", ".join(name for name in BACKENDS if backend_class(name).sasl_plain_listeners)
        error(f"--sasl-plain: the {backend} backend's brokers have no SASL listener (backends with one: {able})")
    try:  # what a scenario's cluster may be: no ZooKeeper ensemble for a KRaft line
        Cluster(kafka=kafka, metadata=metadata, brokers=brokers, zookeeper_nodes=int(zookeeper_nodes))
    except ValidationError as e:
        error("; ".join(f"--{key.replace('_', '-')}: {reason}" for key, reason in validation_problems(e)))
    default_workdir = (lab_home() / "cluster").resolve()
    try:
        refuse_output_dir(workdir or default_workdir, "--workdir")  # a NUL or an overlong name: before resolve()
    except LabError as e:
        fail(e)
    state_file = lab_home() / CLUSTER_STATE
    if state_file.exists():  # nothing started: a setup problem (exit 2), as a missing tool is
        fail(SetupError(f"a cluster is already up ({state_file}); `rebalance-lab cluster down` first"))
    try:
        workdir = (workdir or default_workdir).resolve()
        _empty_cluster_workdir(workdir, ours=workdir == default_workdir)
    except LabError as e:
        fail(e)
    owner = f"cluster:{workdir}"
    spec = ClusterSpec(
        kafka=kafka,
        metadata=metadata,
        brokers=brokers,
        zookeeper_nodes=int(zookeeper_nodes),
        topics=[TopicSpec(name, partitions) for name, partitions in topics],
        sasl_plain=sasl_plain,
    )
    c = None
    try:
        with console.status("starting cluster …"):
            c = open_cluster(backend, spec, workdir, Supervisor(owner=owner), console.print)
            c.start()
    except LabError as e:
        _abandon(owner)
        fail(e)
    except KeyboardInterrupt:
        _abandon(owner)
        error("interrupted", EXIT_INTERRUPTED)
    except BaseException:
        _abandon(owner)  # nothing of a cluster that never came up is left running
        raise
    state = {**c.describe(), "owner": owner}
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=2))
    console.print(f"bootstrap.servers={c.bootstrap_servers}")
    if c.zookeeper_connect:
        console.print(f"zookeeper.connect={c.zookeeper_connect}")
    if sasl_plain:  # the user, never its password
        console.print(
            f"sasl.bootstrap.servers={c.sasl_bootstrap_servers} (SASL_PLAINTEXT, PLAIN, user {sasl_plain.user})",
            markup=False,
        )


def _empty_cluster_workdir(workdir: Path, ours: bool) -> None:
    """A standalone cluster starts from nothing, as a run's does: the last one's data (a ZooKeeper-mode
    broker refuses a KRaft one's meta.properties; old topics would shadow `--topic`) and logs go.
    Only a directory the lab made is emptied — the default one, or one holding the lab's mark."""
    try:
        if workdir.exists() and any(workdir.iterdir()):
            if not (ours or (workdir / CLUSTER_WORKDIR_MARK).exists()):
                raise SetupError(
                    f"--workdir {workdir}: holds files rebalance-lab did not write; "
                    "give a new or empty directory (or the one an earlier `cluster up` used)"
                )
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / CLUSTER_WORKDIR_MARK).write_text("a standalone cluster's workdir: `cluster up` empties it\n")
    except OSError as e:  # a file where the directory should be, no permission
        raise SetupError(f"--workdir {workdir}: {e.strerror or e}") from None


def _stop_detached(owner: str) -> Cleanup:
    """Stop a standalone cluster from its registrations (its command has exited): every backend
    stops what that owner left, in its own order."""
    from harness.cluster.backend import CleanupScope
    from harness.cluster.cleanup import clean_up

    return clean_up(CleanupScope("rebalance-lab cluster down", detached=True, owner=owner), lambda _m: None)


def _abandon(owner: str) -> None:
    """Stop what a `cluster up` that did not come up started; say what could not be."""
    for problem in _stop_detached(owner).problems:
        err_console.print(escape(f"cluster up: {problem}"))


@cluster.command("down")
def cluster_down() -> None:
    """Stop the standalone cluster. Exit code 3 when something of it could not be stopped."""
    state_file = lab_home() / CLUSTER_STATE
    if not state_file.exists():
        console.print("no cluster is up.")
        return
    from harness.cluster.cleanup import tally

    done = _stop_detached(json.loads(state_file.read_text())["owner"])
    if done.problems:
        fail(ClusterError("; ".join(done.problems)))
    state_file.unlink()
    console.print(f"stopped {tally(done.cleaned)}", markup=False)


@cluster.command("status")
def cluster_status() -> None:
    """Show the standalone cluster and whether each process and broker is up. Exit code 1 when
    no cluster is up."""
    from confluent_kafka.admin import AdminClient

    from harness.supervision.processes import registered
    from runtime.logs import QUIET_CLIENT_LOG

    state_file = lab_home() / CLUSTER_STATE
    if not state_file.exists():
        console.print("no cluster is up.")
        sys.exit(1)
    state = json.loads(state_file.read_text())
    alive = {p.name: p for p in registered() if p.owner == state["owner"]}
    for name in state.get("processes", {}):
        p = alive.get(name)
        shown = (
            "[red]gone[/]"
            if p is None or p.state is None
            else "[yellow]stopped[/]"
            if p.stopped
            else "[red]exited[/] (not yet reaped)"
            if p.state == "Z"
            else "[green]running[/]"
        )
        console.print(f"{name:<14} {shown}" + (f" pid {p.pid}" if p else ""))
    try:
        md = AdminClient({"bootstrap.servers": state["bootstrap_servers"], "logger": QUIET_CLIENT_LOG}).list_topics(
            timeout=5
        )
        console.print(
            f"metadata: brokers {sorted(md.brokers)}, topics {sorted(t for t in md.topics if not t.startswith('__'))}"
        )
    except Exception as e:
        console.print(f"metadata: unavailable ({e})")
    console.print(f"bootstrap.servers={state['bootstrap_servers']}")


# ----------------------------------------------------------------------------- run / check
