"""The processes a run starts besides the cluster: the recording producer, one consumer
driver per protocol family, and the group observer — each its own OS process, started by
the harness with ``python -m workloads.<module> SPEC.json``.

Below the harness: a driver imports ``coordinator`` (its wire protocol, for the
``coordinator-v*`` members), ``runtime`` and ``oracle``, never ``harness`` or ``faults``;
what it needs from the harness (addresses, settings, the java driver's classpath) comes
in its spec. What a driver is — its spec, its settings, how it is started, how it writes
the history — is in ``workloads.driver``; the events it writes, in ``workloads.member_events``.
"""
