"""Each cause of a traceback the outside review found, one by one: a bad scenario (through
`schedule`, which validates without starting anything) or a bad history (through `check`)
ends with exit code 2 and one message naming the file, the line or key, and the reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from oracle.checks import CHECKS
from oracle.verdict import resolve_checks

SCENARIO = b"name: t\nduration_s: 30\ntopics: [{name: events, partitions: 3}]\n"


def cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def schedule(tmp_path: Path, content: bytes):
    path = tmp_path / "scenario.yaml"
    path.write_bytes(content)
    return cli("schedule", str(path)), str(path)


SCENARIO_CAUSES = [
    ("not-utf8", SCENARIO.replace(b"name: t", b"name: t\ndescription: caf\xe9"), "line 2, column 17: not UTF-8 text"),
    ("deep-nesting", SCENARIO + b"description: " + b"[" * 5000 + b"]" * 5000, "nested deeper than 20 levels"),
    (
        "deep-block-nesting",
        SCENARIO + b"x:\n" + b"".join(b"  " * i + b"a:\n" for i in range(1, 400)),
        "nested deeper than 20 levels",
    ),
    ("huge-integer", SCENARIO + b"seed: 1" + b"0" * 5000, "line 4, column 7: not valid YAML: cannot read"),
    ("huge-seed", SCENARIO + b"seed: 1" + b"0" * 30, "seed: must be at most"),
    (
        "regex-repeat",
        SCENARIO + b"workload: {topic_pattern: '^a{99999999999}'}",
        "workload.topic_pattern: not a regular expression",
    ),
    ("int-tag", SCENARIO.replace(b"30", b"!!int x"), "line 2, column 13: YAML tags (!!int) are not accepted"),
    ("timestamp-tag", SCENARIO + b"description: !!timestamp 2020-99-99", "YAML tags (!!timestamp)"),
    (
        "python-tag",
        SCENARIO + b"description: !!python/object/apply:os.system [true]",
        "YAML tags (!!python/object/apply:os.system)",
    ),
    ("impossible-date", SCENARIO + b"description: 2020-99-99", "cannot read '2020-99-99': month must be in 1..12"),
    (
        "alias-bomb",
        SCENARIO
        + b"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + b"".join(b"%c: &%c [%s]\n" % (c, c, b", ".join([b"*%c" % (c - 1)] * 10)) for c in b"bcdefg"),
        "more than 50000 values (aliases expanded)",
    ),
    (
        "billion-partitions",
        SCENARIO.replace(b"partitions: 3", b"partitions: 1000000000"),
        "topics[1].partitions: must be at most 4000",
    ),
    (
        "huge-consumer-count",
        SCENARIO + b"workload: {consumers: 100000}",
        "workload.consumers: must be at most 1000",
    ),
    ("infinite-duration", SCENARIO.replace(b"30", b".inf"), "duration_s: must be a finite number"),
    (
        "linger-an-hour",
        SCENARIO + b"workload: {producer: {linger_ms: 3600000}}",
        "workload.producer.linger_ms: must be at most 60000",
    ),
    (
        "check-option-type",
        SCENARIO + b"checks: {duplicates: {max: many}}",
        'checks.duplicates: max must be a whole number ≥ 0, or null (no limit), not "many"',
    ),
    (
        "check-option-range",
        SCENARIO + b"checks: {convergence: {within_s: -5}}",
        "checks.convergence: within_s must be a number of seconds, 0 to 10⁹, not -5",
    ),
    (
        "no-random-kinds",
        SCENARIO + b"random_faults: {count: 2, kinds: []}",
        "random_faults.kinds: must not be empty",
    ),
    (
        "random-network-on-producer",
        SCENARIO + b"random_faults: {count: 2, kinds: [network], targets: [producer]}",
        "random_faults.targets: a drawn network fault on producer: network faults apply to consumers and brokers",
    ),
    (
        "random-network-kraft-broker",
        SCENARIO
        + b"cluster: {kafka: '4.1'}\nrandom_faults: {count: 2, kinds: [network], targets: [consumer-1, broker-1]}",
        None,
    ),  # valid: a KRaft broker's drawn network faults cut its links to the brokers only
    (
        "listeners",
        SCENARIO + b"cluster: {broker_config: {listeners: 'PLAINTEXT://:9092'}}",
        "cluster.broker_config.listeners: the harness sets this for every broker",
    ),
    (
        "zookeeper-connect",
        SCENARIO + b"cluster: {broker_config: {zookeeper.connect: 'elsewhere:2181'}}",
        "cluster.broker_config.zookeeper.connect: the harness sets this",
    ),
    (
        "setting-smuggled-on-a-new-line",
        SCENARIO + b'cluster: {broker_config: {num.io.threads: "4\\nlisteners=x"}}',
        "cluster.broker_config.num.io.threads: a value is one line",
    ),
    ("markup-key", SCENARIO + b"'[/bold]': 1", "scenario.yaml: [/bold]: unknown key"),
    ("bom", b"\xef\xbb\xbf" + SCENARIO, None),  # a byte order mark is fine (some editors write one)
    ("not-a-mapping", b"- name: t\n", "(top level): a scenario is a mapping"),
    (
        "load-stage-kind",
        SCENARIO + b"load: {stages: [{kind: wobble}]}",
        "load.stages[1].kind: unknown stage kind 'wobble' (known: hold, ramp, step, spike, sawtooth)",
    ),
    (
        "load-stage-key",
        SCENARIO + b"load: {stages: [{kind: ramp, to: 4, over_s: 10, by: 2}]}",
        "load.stages[1].by: unknown key",
    ),
    (
        "load-too-big",
        SCENARIO + b"load: {stages: [{kind: spike, to: 5000, for_s: 5}]}",
        "load.stages: the profile reaches 5000 members; a group has at most 1000",
    ),
    (
        "load-too-long",
        SCENARIO + b"load: {stages: [{kind: hold, for_s: 31}]}",
        "load.stages: the profile lasts 31s, longer than duration_s (30s)",
    ),
    (
        "load-sawtooth-upside-down",
        SCENARIO + b"load: {stages: [{kind: sawtooth, low: 5, high: 2, period_s: 5, for_s: 10}]}",
        "load.stages[1].high: 2 is below low (5)",
    ),
    (
        "load-and-member-fault",
        SCENARIO + b"load: {stages: [{kind: ramp, to: 6, over_s: 10}]}\n"
        b"faults: [{kind: pause, target: consumer-5, at_s: 2, duration_s: 3}]",
        "faults[1].kind: pause on members: the load profile decides the group's members",
    ),
    (
        "load-and-stall-on-a-member-it-stops",  # the profile goes down to 2: consumer-3 may be stopped under it
        SCENARIO + b"workload: {consumers: 3}\nload: {stages: [{kind: step, to: 2, by: 1, every_s: 5}]}\n"
        b"faults: [{kind: poll-stall, target: consumer-3, at_s: 2, duration_s: 3}]",
        "faults[1].kind: poll-stall on members: the load profile decides the group's members",
    ),
    (
        "load-hosts-on-no-workers",
        SCENARIO + b"load: {stages: [{kind: hold, for_s: 10}], member_hosts: on-workers}",
        "load.member_hosts: on-workers needs Locust's workers (load.workers: 1 or more)",
    ),
    (
        "load-hosts-on-workers-driver",
        SCENARIO + b"workload: {protocol: zk-eager}\n"
        b"load: {stages: [{kind: hold, for_s: 10}], workers: 2, member_hosts: on-workers}",
        "load.member_hosts: on-workers hosts the members; the librdkafka driver runs one member per process",
    ),
    (
        "load-hosts-on-workers-per-host",
        SCENARIO + b"workload: {members_per_host: 2}\n"
        b"load: {stages: [{kind: hold, for_s: 10}], workers: 2, member_hosts: on-workers}",
        "workload.members_per_host: with load.member_hosts: on-workers each worker's host takes its share",
    ),
    (
        "load-hosts-on-too-few-workers",
        SCENARIO + b"load: {stages: [{kind: spike, to: 600, for_s: 10}], workers: 2, member_hosts: on-workers}",
        "load.workers: the profile's 600 members make 300 in each worker's host; a host takes at most 250",
    ),
    (
        "load-and-scale",
        SCENARIO + b"load: {stages: [{kind: hold, for_s: 10}]}\nfaults: [{kind: scale, consumers: 2, at_s: 2}]",
        "faults[1].kind: scale on members",
    ),
    (
        "load-and-random-members",
        SCENARIO + b"load: {stages: [{kind: hold, for_s: 10}]}\nrandom_faults: {count: 2}",
        "random_faults.targets: members (the default)",
    ),
    (
        "load-and-broker-fault",
        SCENARIO + b"cluster: {brokers: 2}\nload: {stages: [{kind: hold, for_s: 10}]}\n"
        b"faults: [{kind: crash, target: broker-2, at_s: 2, restart_after_s: 3}]",
        None,
    ),  # the cluster is fair game
    # A drawn length is rounded to the millisecond: below one, the draw made a 0 s fault (a pydantic traceback).
    (
        "random-length-rounds-to-zero",
        SCENARIO + b"random_faults: {count: 3, duration_s: [1.0e-9, 1.0e-9]}",
        "random_faults.duration_s: [1e-09, 1e-09]: a drawn length is rounded to the millisecond; the shortest must be "
        "at least 0.001s",
    ),
    (
        "random-length-may-round-to-zero",
        SCENARIO + b"random_faults: {count: 3, duration_s: [0.0004, 2]}",
        "the shortest must be at least 0.001s",
    ),
    ("random-length-one-millisecond", SCENARIO + b"random_faults: {count: 3, duration_s: [0.001, 0.001]}", None),
    (
        "random-length-nan",
        SCENARIO + b"random_faults: {count: 3, duration_s: [.nan, 2]}",
        "random_faults.duration_s[1]: must be a finite number",
    ),
    (
        "random-lengths-reversed",
        SCENARIO + b"random_faults: {count: 3, duration_s: [5, 2]}",
        "is not a [min, max] range",
    ),
    ("random-count-zero", SCENARIO + b"random_faults: {count: 0}", "random_faults.count: must be at least 1, got 0"),
    (
        "random-window-empty",
        SCENARIO + b"random_faults: {count: 3, start_s: 20, end_s: 20}",
        "random_faults.end_s: the window 20.0s..20.0s must be non-empty",
    ),
    ("random-window-past-the-run", SCENARIO + b"random_faults: {count: 3, end_s: 31}", "within duration_s (30.0s)"),
    (
        "random-default-window-empty",
        SCENARIO.replace(b"30", b"5") + b"random_faults: {count: 3}",
        "random_faults.end_s: the window 5s..0.0s must be non-empty",
    ),
    ("random-targets-empty", SCENARIO + b"random_faults: {count: 3, targets: []}", None),  # empty: every member
]


@pytest.mark.parametrize("content, reason", [c[1:] for c in SCENARIO_CAUSES], ids=[c[0] for c in SCENARIO_CAUSES])
def test_a_bad_scenario_is_one_message_naming_file_key_and_reason(tmp_path, content, reason):
    result, path = schedule(tmp_path, content)
    if reason is None:
        assert result.exit_code == 0, result.output
    else:
        assert (
            result.exit_code == 2
            and f"{path}: " in result.output
            and reason in re.sub(r" \(line \d+\)", "", result.output)
        ), result.output


def test_a_scenario_that_is_not_a_file_or_is_too_large(tmp_path):
    (tmp_path / "dir.yaml").mkdir()
    assert "dir.yaml: a directory, not a file" in cli("schedule", str(tmp_path / "dir.yaml")).output
    (tmp_path / "big.yaml").write_bytes(SCENARIO + b"#" * 2**20)
    assert "big.yaml: (file): larger than 1 MiB" in cli("schedule", str(tmp_path / "big.yaml")).output


def test_a_bad_scenario_creates_no_run_directory(tmp_path):
    (tmp_path / "bad.yaml").write_bytes(SCENARIO + b"checks: {duplicates: {max: many}}")
    for args in (
        ["run", str(tmp_path / "bad.yaml")],
        ["compare", str(tmp_path / "bad.yaml"), "--protocols", "zk-eager"],
    ):
        result = cli(*args, "--runs-dir", str(tmp_path / "runs"))
        assert result.exit_code == 2 and "checks.duplicates (line 4): max must be" in result.output
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------------- histories


def good_history(history_builder) -> list[dict]:
    b = history_builder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    c1.at(100).join_sent().joined(1, leader=True).synced().assigned(0, 1)
    b.at(200).acked(0, 0, 9)
    c1.at(300).consumed(0, 0, 9).committed(0, 10)
    b.at(400).done()
    return b.build()


def check(tmp_path: Path, content: bytes):
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "history.jsonl").write_bytes(content)
    return cli("check", str(run_dir)), str(run_dir / "history.jsonl")


def lines(events: list[dict]) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


def test_the_unmutated_history_passes(tmp_path, history_builder):
    result, _ = check(tmp_path, b"\n".join(lines(good_history(history_builder))))
    assert result.exit_code == 0, result.output


def _set(events: list[dict], name: str, **fields) -> list[dict]:
    target = next(e for e in events if e["name"] == name)
    target.update(fields)
    return events


HISTORY_CAUSES = [
    ("not-utf8", lambda ls: ls[:2] + [ls[2][:-1] + b', "x": "caf\xe9"}'] + ls[3:], ":3: not UTF-8 text (byte 0xe9"),
    ("not-an-object", lambda ls: ls[:2] + [b"[1, 2]"] + ls[2:], ":3: expected an event (a JSON object), got [1, 2]"),
    (
        "wrong-type",
        lambda ls: lines(
            _set(
                [json.loads(x) for x in ls],
                "records_consumed",
                ranges=[{"topic": "events", "partition": 0, "min_offset": 0, "max_offset": "9"}],
            )
        ),
        'records_consumed.ranges[0].max_offset: expected an offset (a 64-bit integer), got "9"',
    ),
    (
        "missing-key",
        lambda ls: lines([{k: v for k, v in json.loads(x).items() if k != "mono_ms"} for x in ls]),
        ":1: run_started.mono_ms: missing",
    ),
    (
        "deep-nesting",
        lambda ls: ls[:1] + [b"[" * 100_000 + b"]" * 100_000] + ls[1:],
        ":2: not a JSON event (nested too deeply)",
    ),
    (
        "huge-integer",
        lambda ls: ls[:1] + [b'{"name": "x", "mono_ms": 1' + b"0" * 5000 + b', "source": "h"}'] + ls[1:],
        ":2: not a JSON event (Exceeds the limit (4300 digits)",
    ),
    (
        "nan",
        lambda ls: ls[:1] + [b'{"name": "x", "mono_ms": NaN, "source": "h"}'] + ls[1:],
        ":2: x.mono_ms: expected a finite number, got NaN",
    ),
    (
        "infinite-time",
        lambda ls: ls[:1] + [b'{"name": "x", "mono_ms": 1e999, "source": "h"}'] + ls[1:],
        ":2: x.mono_ms: expected a finite number, got Infinity",
    ),
    (
        "billion-partitions",
        lambda ls: lines(
            _set([json.loads(x) for x in ls], "run_started", topics=[{"topic": "events", "partitions": 10**9}])
        ),
        ":1: run_started.topics[0].partitions: expected a partition count",
    ),
    (
        "check-options",
        lambda ls: lines(_set([json.loads(x) for x in ls], "run_started", checks={"duplicates": {"max": "many"}})),
        "run_started.checks.duplicates: max must be a whole number",
    ),
    ("torn-line-mid-file", lambda ls: ls[:2] + [ls[2][:20]] + ls[2:], ":3: not a JSON event"),
    ("empty", lambda ls: [], "history.jsonl: no events: nothing to judge"),
    ("only-a-torn-line", lambda ls: [ls[0][:30]], "no events: nothing to judge (line 1: not a JSON event"),
]


@pytest.mark.parametrize("damage, reason", [c[1:] for c in HISTORY_CAUSES], ids=[c[0] for c in HISTORY_CAUSES])
def test_a_bad_history_is_one_message_naming_file_line_and_reason(tmp_path, history_builder, damage, reason):
    result, path = check(tmp_path, b"\n".join(damage(lines(good_history(history_builder)))) + b"\n")
    assert result.exit_code == 2 and path in result.output and reason in re.sub(r" \(line \d+\)", "", result.output), (
        result.output
    )


def test_a_history_with_a_byte_order_mark_or_a_torn_last_line_is_judged(tmp_path, history_builder):
    content = b"\n".join(lines(good_history(history_builder)))
    result, _ = check(tmp_path, b"\xef\xbb\xbf" + content + b'\n{"name": "records_con')
    assert result.exit_code == 0, result.output


def test_member_names_are_printed_as_text_not_markup(tmp_path, history_builder):
    content = b"\n".join(lines(good_history(history_builder))).replace(b'"consumer-1"', b'"[/bold]"')
    result, _ = check(tmp_path, content)
    assert result.exit_code == 0 and "[/bold]" in result.output, result.output


def test_every_check_accepts_its_own_defaults():
    resolve_checks({name: dict(module.OPTIONS) for name, module in CHECKS.items()})


def test_a_commit_without_a_request_time_next_to_a_timed_one_is_judged(tmp_path, history_builder):
    # librdkafka's auto commits are reported without the instant their request left (null).
    events = good_history(history_builder)
    auto = next(e for e in events if e["name"] == "offsets_committed")
    events.insert(events.index(auto), {**auto, "trigger": "auto", "started_mono_ms": None})
    for n, e in enumerate((e for e in events if e["source"] == auto["source"]), 1):  # the writer numbers it too
        e["seq"] = n
    result, _ = check(tmp_path, b"\n".join(lines(events)))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("value", ["1" + "0" * 400, ".nan", "true", "[1]"])
def test_a_check_option_of_the_wrong_kind_of_number_is_refused(tmp_path, value):
    result, path = schedule(tmp_path, SCENARIO + b"checks: {convergence: {stall_s: %s}}" % value.encode())
    assert (
        result.exit_code == 2 and "checks.convergence (line 4): stall_s must be a number of seconds" in result.output
    ), result.output
