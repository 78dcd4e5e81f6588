"""What every process of a run shares: the harness, the drivers, the observer, the
project's coordinator and the fault scheduler.

- ``history``: appending events to the run's ``history.jsonl`` (one ``write()`` a line);
- ``child``: a child process's spec file and its clean stop on SIGTERM/SIGINT;
- ``errors``: the errors explained in one message, and the exit codes they map to;
- ``home``: where this user's lab state lives (``REBALANCE_LAB_HOME``);
- ``logs``: loggers that keep expected client noise off the terminal;
- ``zookeeper``: what ZooKeeper clients share (session ids as ZooKeeper prints them,
  the published session file).

A layer just above ``oracle``: it imports nothing of the project but ``oracle``
(the history's vocabulary), so every other package may import it.
"""
