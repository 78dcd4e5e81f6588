"""The project's own group coordinator (issue 5; docs/coordinator.md).

A real service over real ZooKeeper that runs the coordinator designs of seeds
001–004 — ``v1`` (the coordinator assigns), ``v2`` (JoinGroup/SyncGroup, the
leader member assigns), ``v3`` (v2 + KIP-62's rebalance timeout and KIP-134's
initial delay) — one feature switchable at a time, which real Kafka cannot do.

- ``protocol``: the line-JSON wire protocol and Kafka's error codes;
- ``group``: one group's state machine (pure);
- ``assignors``: range and roundrobin (run by the coordinator in v1, by the leader member later);
- ``store``: group metadata and offsets in ZooKeeper, fenced by the leader epoch;
- ``election``: leadership among instances, given up on SUSPENDED/LOST or an expired lease;
- ``server``: the instance: TCP server, requests, timers; ``__main__``: its process
  (``python -m coordinator SPEC.json``, started by the harness's cluster backend).

A system under test, not part of the harness: it imports only ``runtime`` (history
writer, child-process plumbing, ZooKeeper helpers) and ``oracle`` (the history's
vocabulary). Its client, the ``coordinator-v*`` driver ``workloads/coordinated.py``,
imports the wire protocol, the variants and the assignors from here: one definition each.
"""
