"""runtime/secrets.py: which settings are secret, redaction, properties files, ${ENV} references;
and how a scenario's client settings are read, written and handed to a client."""

from __future__ import annotations

import json

import pytest

from harness.scenario import load_scenario, redact_scenario_data, redacted_scenario_text
from runtime import secrets
from runtime.errors import ScenarioError
from tests.lines import unlined


@pytest.fixture(autouse=True)
def empty_registry():
    secrets.forget_all()
    yield
    secrets.forget_all()


@pytest.mark.parametrize(
    "key",
    [
        "sasl.password",
        "ssl.keystore.password",
        "SASL.PASSWORD",
        "basic.auth.user.info.secret",
        "sasl.oauthbearer.client.secret",
        "sasl.jaas.config",
        "ssl.key.pem",
        "ssl.key.location",
        "ssl.keystore.key",
        "ssl.keystore.location",
    ],
)  # ssl.key*: the keystore's path too
def test_secret_keys(key):
    assert secrets.is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "sasl.username",
        "security.protocol",
        "sasl.mechanism",
        "ssl.ca.location",
        "ssl.certificate.location",
        "socket.keepalive.enable",
    ],
)
def test_not_secret_keys(key):
    assert not secrets.is_secret_key(key)


def test_split_and_the_child_channel(monkeypatch):
    config = {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "hunter22"}
    public, secret = secrets.split_client_config(config)
    assert public == {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "***"}
    assert secret == {"sasl.password": "hunter22"}
    env = secrets.child_env(config)
    assert "hunter22" not in json.dumps(public) and json.loads(env[secrets.SECRET_ENV]) == secret
    monkeypatch.setenv(secrets.SECRET_ENV, env[secrets.SECRET_ENV])
    secrets.forget_all()
    assert secrets.child_settings(public) == config
    assert secrets.redact_text("error: hunter22 refused") == "error: *** refused"  # the child registered it


def test_redaction_by_key_and_by_value():
    secrets.register("from-the-env-1")
    secrets.register("ab")  # too short to search free text for; still masked as a setting's value
    data = {
        "error": "login with from-the-env-1 failed",
        "cfg": {"sasl.jaas.config": "x", "a": "from-the-env-1", "b": "ab", "n": [1, "from-the-env-1"]},
    }
    assert secrets.redact(data) == {
        "error": "login with *** failed",
        "cfg": {"sasl.jaas.config": "***", "a": "***", "b": "***", "n": [1, "***"]},
    }
    assert secrets.redact_text("ab cd") == "ab cd"


def test_env_references(monkeypatch):
    monkeypatch.setenv("RL_U", "alice-the-user")
    resolved, problems = secrets.resolve_config(
        {"sasl.username": "${RL_U}", "x": "a$${RL_U}b", "n": 3, "sasl.password": "${RL_NOT_SET_ANYWHERE}"}
    )
    assert resolved["sasl.username"] == "alice-the-user" and resolved["x"] == "a${RL_U}b" and resolved["n"] == 3
    assert problems == [("sasl.password", "${RL_NOT_SET_ANYWHERE} is not set in the environment")]
    assert "alice-the-user" in secrets.registered()  # an ${ENV} value is secret whatever its key


def test_properties_format(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text(
        "# comment\n! another\n\n  security.protocol = SASL_SSL\nsasl.mechanism:PLAIN\n"
        'sasl.username alice\nsasl.jaas.config=org.Module required \\\n    user="a";\n'
        "ssl.ca.location=C:\\\\certs\\\\ca.pem\nx.unicode=\\u0041b\nempty=\nsasl.username=bob\n"
    )
    settings, problems = secrets.read_properties(path)
    assert problems == []
    assert settings == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "bob",
        "sasl.jaas.config": 'org.Module required user="a";',
        "ssl.ca.location": "C:\\certs\\ca.pem",
        "x.unicode": "Ab",
        "empty": "",
    }


def test_properties_env_and_problems(tmp_path, monkeypatch):
    monkeypatch.delenv("RL_MISSING_PW", raising=False)
    path = tmp_path / "client.properties"
    path.write_text("sasl.password=${RL_MISSING_PW}\nbad!key=1\n")
    _, problems = secrets.read_properties(path)
    assert problems == [
        ("line 1: sasl.password", "${RL_MISSING_PW} is not set in the environment"),
        ("line 2", "'bad!key' is not a Kafka config name"),
    ]
    assert secrets.read_properties(tmp_path / "nope")[1] == [("(file)", "No such file or directory")]


SCENARIO = """\
name: ext   # a comment that stays
duration_s: 10
cluster:
  backend: external
  bootstrap_servers: "127.0.0.1:9092"
  client_config:
    security.protocol: SASL_PLAINTEXT
    sasl.username: ${RL_USER}
    sasl.password: literal-Secret-99   # stays a comment
    ssl.key.password: "${RL_KEY_PW}"
topics: [{name: events, partitions: 1}]
"""


def test_a_scenario_with_env_references_and_a_properties_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RL_USER", "user-from-env")
    monkeypatch.setenv("RL_KEY_PW", "key-pw-from-env")
    path = tmp_path / "ext.yaml"
    path.write_text(SCENARIO)
    props = tmp_path / "client.properties"
    props.write_text("sasl.mechanism=PLAIN\nsasl.password=from-the-file-77\n")
    s = load_scenario(path, client_config=props)
    assert s.cluster.client_config == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.username": "user-from-env",
        "sasl.password": "from-the-file-77",
        "ssl.key.password": "key-pw-from-env",
        "sasl.mechanism": "PLAIN",
    }
    text = redacted_scenario_text(path)
    # in place: every other byte as written, ${NAME} references kept, literal values masked
    assert text == SCENARIO.replace("literal-Secret-99", '"***"')
    data = redact_scenario_data(
        {
            "cluster": {
                "client_config": {
                    "sasl.password": "literal-Secret-99",
                    "a": "${RL_USER}",
                    "sasl.jaas.config": "${RL_KEY_PW}",
                }
            }
        }
    )
    assert data["cluster"]["client_config"] == {
        "sasl.password": "***",
        "a": "${RL_USER}",
        "sasl.jaas.config": "${RL_KEY_PW}",
    }


def test_a_missing_variable_names_the_file_key_and_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("RL_USER", raising=False)
    monkeypatch.setenv("RL_KEY_PW", "x")
    path = tmp_path / "ext.yaml"
    path.write_text(SCENARIO)
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert (
        unlined(str(e.value))
        == f"{path}: cluster.client_config.sasl.username: ${{RL_USER}} is not set in the environment"
    )
    assert e.value.exit_code == 2


def test_a_properties_file_is_held_to_the_client_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("RL_USER", "u")
    monkeypatch.setenv("RL_KEY_PW", "x")
    path = tmp_path / "ext.yaml"
    path.write_text(SCENARIO)
    props = tmp_path / "client.properties"
    props.write_text("group.id=mine\n")
    with pytest.raises(ScenarioError, match=r"client.properties: group.id: the harness sets this for each client"):
        load_scenario(path, client_config=props)
    local = tmp_path / "local.yaml"
    local.write_text("name: l\nduration_s: 5\ntopics: [{name: e, partitions: 1}]\n")
    props.write_text("sasl.username=u\n")
    with pytest.raises(ScenarioError, match=r"client settings are for a cluster the harness does not run"):
        load_scenario(local, client_config=props)


def test_the_readme_example(tmp_path, monkeypatch):
    """docs/scenarios.md, Secrets: its properties file reads as written, with the password from the
    environment, and the external scenario it describes takes it."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "docs" / "scenarios.md").read_text()
    section = readme[readme.index("### Secrets") :]
    props = section[section.index("```properties\n") + len("```properties\n") :]
    props = props[: props.index("```")]
    commands = section[section.index("```sh\n") :]
    assert "--sasl-plain chaos:CHAOS_PASSWORD" in commands and "--client-config client.properties" in commands
    monkeypatch.setenv("CHAOS_PASSWORD", "the-readme-password")
    (tmp_path / "client.properties").write_text(props)
    (tmp_path / "ext.yaml").write_text(
        "name: ext\nduration_s: 10\ntopics: [{name: events, partitions: 1}]\ncluster:\n  backend: external\n"
        "  bootstrap_servers: 127.0.0.1:9092\n  client_config: {security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN}\n"
    )
    s = load_scenario(tmp_path / "ext.yaml", client_config=tmp_path / "client.properties")
    assert s.cluster.client_config["sasl.password"] == "the-readme-password"
    assert s.cluster.client_config["sasl.username"] == "chaos"


def test_credentials_refused_while_running_are_bad_input():
    from pathlib import Path

    from harness.run.loop import RunResult

    assert RunResult(Path("r"), "error", None, "refused", bad_input=True).exit_code == 2
    assert RunResult(Path("r"), "error", None, "broke").exit_code == 3


def test_a_history_line_never_carries_a_secret_json_would_escape(tmp_path):
    from runtime.history import HistoryWriter

    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="pä\\"ss";'
    secrets.register(jaas)
    secrets.register('pä"ss')
    HistoryWriter(tmp_path / "h.jsonl", "consumer-1").emit("client_log", level=3, message=f"bad config {jaas}")
    line = (tmp_path / "h.jsonl").read_text(encoding="utf-8")
    assert "ss" not in line.split('"message"')[1] and "***" in line, line


def test_a_stamp_from_another_clock_never_goes_back_within_a_writer(tmp_path):
    from runtime.history import HistoryWriter

    writer = HistoryWriter(tmp_path / "h.jsonl", "broker-1")
    first = writer.emit("coordinator_stabilized", ts=1000.0, mono_ms=500.0, clock="broker-log")
    second = writer.emit("coordinator_preparing_rebalance", ts=990.0, mono_ms=490.0, clock="broker-log")
    assert (second["mono_ms"], second["ts"]) == (first["mono_ms"], 1000.0)
