"""The ``faults:`` and ``random_faults:`` sections: their entries (one model per fault kind,
from faults/catalogue.py), what makes an entry impossible in this scenario, and the run's
schedule with the seeded random faults drawn.

Each entry is checked against ``ScenarioFacts`` (facts.py) by its own kind
(``FaultSpec.problems``), in the order the faults fire, each seeing what the ones before it
created; then the timeline: who is up, down or not started yet when a fault acts on a process.
Random faults are checked for every shape a draw can give, whatever the seed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Literal, Union

from pydantic import Field, TypeAdapter

from faults import catalogue, network, random_schedule
from faults.base import COORDINATOR, DAY_S, Drawing, FaultSpec, ScenarioFacts
from faults.capabilities import lacking
from faults.strict import Strict
from harness.scenario.workload import client_problem
from oracle.protocols import GENERATIONS
from workloads.driver import driver_of

if TYPE_CHECKING:
    from harness.scenario.model import Scenario

# Every fault kind's entry, from the catalogue (faults/): the kind names the model.
Fault = Annotated[Union[tuple(catalogue.SPECS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007
FAULT_KINDS = tuple(catalogue.SPECS)
RANDOM_KINDS = catalogue.DRAWABLE
FAULT = TypeAdapter(Fault)  # one entry, validated as a written one is


class RandomFaults(Strict):
    """Faults drawn from the scenario's seed: which kind, which target, when, how long.
    The same seed always gives the same schedule (``rebalance-lab schedule`` prints it)."""

    count: Annotated[int, Field(ge=1, le=1000)]
    kinds: Annotated[list[Literal[RANDOM_KINDS]], Field(min_length=1)] = ["pause", "crash", "network"]  # type: ignore[valid-type]
    targets: Annotated[list[str] | None, Field(max_length=100)] = None  # default (or empty): every consumer
    start_s: Annotated[float, Field(ge=0, le=DAY_S)] = 5
    end_s: Annotated[float | None, Field(gt=0, le=DAY_S)] = None  # default: duration_s - 5
    duration_s: tuple[Annotated[float, Field(gt=0, le=DAY_S)], Annotated[float, Field(gt=0, le=DAY_S)]] = (2.0, 15.0)
    # The directions a drawn cut of a member's lane may take (network.DIRECTIONS): both ways unless listed.
    directions: Annotated[list[Literal[network.DIRECTIONS]], Field(min_length=1)] = ["both"]  # type: ignore[valid-type]


def written_problems(scenario: Scenario, facts: ScenarioFacts) -> list[str]:
    """Every written fault against the facts, in the order they fire: timed ones by at_s, then
    the triggered ones (whenever their state comes); then the timeline of who is up when."""
    problems = []
    declared = facts
    for i, f in sorted(enumerate(scenario.faults), key=lambda item: (item[1].on is not None, item[1].at_s)):
        own = entry_problems(scenario, f, facts)
        problems += [f"faults.{i}.{key}: {reason}" for key, reason in own]
        after = f.after(facts)  # what this fault creates or grows is there for the faults after it
        if not own:
            problems += [
                f"faults.{i}.{key}: {reason}" for key, reason in moved_members_problems(scenario, f, facts, after)
            ]
        facts = after
    return problems + timeline_problems(scenario, declared.members)


def entry_problems(scenario: Scenario, f: FaultSpec, facts: ScenarioFacts) -> list[tuple[str, str]]:
    """(key, reason) for one fault, whatever its kind."""
    if refused := f.refusals(facts):  # what its backend cannot do: nothing else about it matters
        return refused
    out = f.problems(facts)
    if facts.hosted and f.whole_process and f.acts_on_members(facts.members):
        out.append(
            (
                "kind",
                f"{f.kind} acts on a member's whole process ({f.whole_process}); hosted members share "
                "one (workload.members_per_host: 1)",
            )
        )
    if f.at_s >= scenario.duration_s:
        out.append(("at_s", f"{f.at_s}s is not within duration_s ({scenario.duration_s}s)"))
    if f.on and f.on.member is not None and f.on.member not in facts.members:
        out.append(("on.member", f"no member {f.on.member!r} in this scenario (members: {', '.join(facts.members)})"))
    return out


def moved_members_problems(
    scenario: Scenario, f: FaultSpec, before: ScenarioFacts, after: ScenarioFacts
) -> list[tuple[str, str]]:
    """Each (client, generation) pair ``f`` starts members on — a new client (rolling-client-upgrade),
    another generation (protocol-migration: ``member_protocols``, ``after.protocol``) — checked by the
    rule the workload's own pair is (workload.client_problem), against the brokers the members meet."""
    if after.client is None:
        return []
    w = scenario.workload
    key = "to" if "to" in type(f).model_fields else "kind"
    release = after.release if after.consumer_protocol else None  # KIP-848 served: its heartbeat version
    protocols = dict.fromkeys(p for p in (after.protocol, *f.member_protocols()) if p)
    out = []
    for protocol in protocols:
        if (after.client, protocol) == (before.client, before.protocol):
            continue  # what the members ran before: checked where it began
        generation = GENERATIONS[protocol]
        if w.driver not in generation.drivers:
            continue  # the fault's kind says so (protocol-migration's own problems)
        driver = driver_of(generation.drivers[w.driver])
        problem = client_problem(after.client, driver, w.driver, generation, release)
        if problem:
            out.append((key, problem))
    return list(dict.fromkeys(out))


def timeline_problems(scenario: Scenario, members: tuple[str, ...]) -> list[str]:
    """A written fault that acts on its target's process (`acts_on_process`) must find it up when
    it starts: a member the group has at that moment (not one a later scale-up or join storm
    starts, nor one a scale-down stopped or a crash ended), and no process a crash has down
    until its restart. Otherwise it would act on nothing and the run would not be the chaos
    it asks for. Members are numbered as WorkloadProcesses numbers them: new ones after the
    highest so far, the newest stop first, counting the live ones. Where that is not known
    here — after a triggered fault that changes the group (it fires whenever its state comes),
    or a scale while a crashed member waits for its restart — members are not judged."""
    consumers = scenario.workload.consumers
    problems, running, highest, known = [], list(range(1, consumers + 1)), consumers, True
    down: dict[str, tuple[float, float, int]] = {}  # target -> (crashed at, restarted at, its fault's index)
    for i, f in sorted(enumerate(scenario.faults), key=lambda item: item[1].at_s):
        target = getattr(f, "target", None)
        crashed, restarted, j = down.get(target, (math.inf, math.inf, -1))
        if f.on is None and f.acts_on_process:
            if crashed <= f.at_s <= restarted:  # a restart at the same instant comes after it
                problems.append(
                    f"faults.{i}.target: {target} is down at workload+{f.at_s:g}s: faults.{j} crashed it at "
                    f"workload+{crashed:g}s"
                    + (f" and restarts it at workload+{restarted:g}s" if restarted < math.inf else ", for good")
                )
            elif target in members and known and int(target.rsplit("-", 1)[1]) not in running:
                problems.append(
                    f"faults.{i}.target: {target} is not running at workload+{f.at_s:g}s (the group's members "
                    f"then: {', '.join(f'consumer-{n}' for n in running) or 'none'})"
                )
        if f.effects.kills and f.on is None and target != COORDINATOR:  # that one is resolved when injected
            down[target] = (f.at_s, f.at_s + (f.effects.restart_after_s or math.inf), i)
        if not f.acts_on_members(()):  # only scale and join storms change who the members are
            continue
        waiting = any(c <= f.at_s < r < math.inf for t, (c, r, _) in down.items() if t in members)
        if f.on is not None or waiting:
            known = False
            continue
        gone = {t for t, (c, r, _) in down.items() if c <= f.at_s and r == math.inf}  # a scale counts live ones
        live = [n for n in running if f"consumer-{n}" not in gone]
        after = f.members_after(len(live))
        started = max(after - len(live), 0)  # new ones numbered after the highest; the newest stop first
        running = live[:after] + list(range(highest + 1, highest + 1 + started))
        highest += started
    return problems


def random_problems(scenario: Scenario, facts: ScenarioFacts) -> list[str]:
    """``random_faults``: a window within the run, a length range, targets that exist, and every
    fault a draw can give a listed target one the run can inject."""
    r = scenario.random_faults
    end = r.end_s if r.end_s is not None else scenario.duration_s - 5
    out = []
    if not r.start_s < end <= scenario.duration_s:
        out.append(
            f"end_s: the window {r.start_s}s..{end}s must be non-empty and within duration_s ({scenario.duration_s}s)"
        )
    if r.duration_s[0] > r.duration_s[1]:
        out.append(f"duration_s: [{r.duration_s[0]}, {r.duration_s[1]}] is not a [min, max] range")
    elif r.duration_s[0] < random_schedule.RESOLUTION_S:  # a length drawn below it rounds to 0: no fault at all
        out.append(
            f"duration_s: [{r.duration_s[0]:g}, {r.duration_s[1]:g}]: a drawn length is rounded to the "
            f"millisecond; the shortest must be at least {random_schedule.RESOLUTION_S:g}s"
        )
    unknown = [t for t in r.targets or [] if t not in facts.targets or t == COORDINATOR]
    if unknown:
        out.append(f"targets: no process {', '.join(map(repr, unknown))} in this scenario")
    drawing = Drawing(
        members=facts.members,
        zookeeper=facts.zookeeper,
        brokers=len(facts.brokers),
        kafka_apis=scenario.workload.generation.kafka_apis,
        directions=tuple(r.directions),
        static_membership=scenario.workload.generation.static_membership,
        member_epochs=scenario.workload.generation.member_epochs,
    )
    for kind in dict.fromkeys(r.kinds):
        spec = catalogue.SPECS[kind]
        out += [f"kinds: {kind}: {c.refusal(facts.backend)}" for c in lacking(spec.needs, facts.capabilities)]
        if not all(spec.drawable_for(t, drawing) for t in r.targets or []):
            out.append(f"kinds: {kind} needs {spec.draw_targets} only")
    # Whatever the seed, every fault the draw can give a target must be one the run can inject.
    for target in dict.fromkeys(t for t in r.targets or [] if t not in unknown):
        for probe in _random_shapes(r, target, drawing):
            out += [
                f"targets: a drawn {probe.kind} fault on {target}: {reason}"
                for key, reason in entry_problems(scenario, probe, facts)
                if key != "at_s"
            ]
    return list(dict.fromkeys(out))


def _random_shapes(r: RandomFaults, target: str, drawing: Drawing) -> list[FaultSpec]:
    """One fault of each shape faults.random_schedule.draw can give ``target``."""
    return [
        FAULT.validate_python({"kind": kind, "target": target, "at_s": 0.0, **options})
        for kind in dict.fromkeys(r.kinds)
        if catalogue.SPECS[kind].drawable_for(target, drawing)
        for options in catalogue.SPECS[kind].draw_shapes(target, drawing)
    ]


def schedule(scenario: Scenario) -> list[dict]:
    """Every fault of the run in time order, the seeded random ones expanded, with ids."""
    faults = [f.model_dump() for f in scenario.faults]
    if scenario.random_faults:
        # Through the model: drawn faults carry every field, defaults included, as written ones do.
        drawn = random_schedule.draw(
            scenario.random_faults.model_dump(),
            seed=scenario.seed,
            duration_s=scenario.duration_s,
            consumers=scenario.workload.member_names(),
            zookeeper=scenario.cluster.zookeeper_mode and not scenario.cluster.external,
            brokers=scenario.cluster.brokers,
            written=scenario.faults,
            kafka_apis=scenario.workload.generation.kafka_apis,
            static_membership=scenario.workload.generation.static_membership,
            member_epochs=scenario.workload.generation.member_epochs,
        )
        faults += [FAULT.validate_python(f).model_dump() for f in drawn]
    faults.sort(key=lambda f: f["at_s"])  # stable: ties keep the file's order
    return [{"fault_id": f"f{i}", **f} for i, f in enumerate(faults, 1)]
