"""Scenario files: what cluster, which group, which faults when, which checks.

Validated with pydantic before anything starts; every problem is reported as
``FILE: key (line N): reason`` (a ScenarioError, exit code 2; ``faults[1].at_s`` is the first
fault's), all of them at once. What a
scenario may hold is bounded: docs/inputs.md.

Where each part is:

- ``files``     reading a file (YAML within bounds), ``${NAME}`` client settings and
                ``--client-config`` files, the copy a run keeps with secrets masked,
                ``load_scenario``
- ``errors``    pydantic's errors as problems in the lab's words, keys one-based with
                their lines in the file
- ``kinds``     the kinds of file (scenario, suite, sweep, bug, history) and the keys
                that tell them apart
- ``model``     ``Scenario``: the sections together, what is checked across them, and
                what a run asks of the whole (member slots, schedule, broker settings)
- ``cluster``   the ``cluster:`` section and the ``topics:``, the settings the harness owns
- ``workload``  the ``workload:`` section, and each driver family's own section in it
                (``librdkafka``, ``java``, ``coordinator``, ``zk_eager``)
- ``faults``    ``faults:`` and ``random_faults:``: entries, their problems in firing
                order, who is down when, the schedule with the random draws
- ``facts``     ``ScenarioFacts``: what fault kinds check their entries against
- ``checks``    the ``checks:`` section, against the oracle's checks and options
- ``variants``  the same scenario under another protocol, Kafka line, seed or backend

The names below are the package's public ones: import them from ``harness.scenario``.
"""

from harness.scenario.cluster import HARNESS_BROKER_SETTINGS, HARNESS_CLIENT_SETTINGS, Cluster, Topic
from harness.scenario.errors import validation_problems
from harness.scenario.faults import FAULT_KINDS, RANDOM_KINDS, RandomFaults
from harness.scenario.files import (
    client_config_file,
    load_scenario,
    load_scenario_data,
    read_scenario_data,
    redact_scenario_data,
    redacted_scenario_text,
    resolve_client_config,
    scenario_from_data,
)
from harness.scenario.model import Recovery, Scenario, Seed, seed_problem
from harness.scenario.workload import Workload

__all__ = [
    "FAULT_KINDS",
    "HARNESS_BROKER_SETTINGS",
    "HARNESS_CLIENT_SETTINGS",
    "RANDOM_KINDS",
    "Cluster",
    "RandomFaults",
    "Recovery",
    "Scenario",
    "Seed",
    "Topic",
    "Workload",
    "client_config_file",
    "load_scenario",
    "load_scenario_data",
    "read_scenario_data",
    "redact_scenario_data",
    "redacted_scenario_text",
    "resolve_client_config",
    "scenario_from_data",
    "seed_problem",
    "validation_problems",
]
