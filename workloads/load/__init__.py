"""Load profiles run by Locust: the group's size follows a profile, its rebalances are Locust requests.

Locust runs in its own process (``python -m locust -f workloads/load/locustfile.py``: it
patches the standard library with gevent when imported, which the harness and the members
must never see). Each Locust user is one member of the group: a user starting or
stopping changes the member count the run follows (``control_file``), and the harness
starts or stops real members — its own processes, in the history, stopped on teardown
like any other. Locust's shape (the scenario's ``load.stages``, workloads/load/profile.py)
decides how many users run; the feed (workloads/load/feed.py) tells Locust each
rebalance the oracle measures on the live history, as a request of type ``rebalance``.

This module is what the harness imports: the spec, never Locust.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUEST_TYPE = "rebalance"  # Locust's "Type" column for a rebalance (its name: the protocol)
RECORD_TYPE = "record"  # and for a record's latency (its name: feed.PRODUCE or feed.END_TO_END)


@dataclass
class LoadSpec:
    history: str
    control_file: str  # {"members": N}: the count the run follows, written at each change
    profile: dict  # the scenario's `load` section (workloads.load.profile.LoadProfile)
    initial_members: int  # workload.consumers: the group formed in the warm-up
    protocol: str  # the name of Locust's rebalance rows
    link: str | None = None  # load.member_hosts on-workers: the harness's host link, HOST:PORT (runtime/host_link.py)
    host_driver: str | None = None  # and the driver module the workers' member hosts run
