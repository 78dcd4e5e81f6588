"""harness/cluster/zookeeper.py without a cluster: ZooKeeper's MBean names, picking a
session's connection MBean, and Jolokia's answers (from a stub HTTP server on 127.0.0.1
replaying what Jolokia 2.6 answered a real ZooKeeper 3.8)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.etree import ElementTree

import pytest

from harness.cluster import zookeeper
from harness.cluster.zookeeper import (
    JolokiaError,
    connection_mbeans,
    object_name_keys,
    session_hex,
    terminate_session,
    zookeeper_path,
)
from harness.components import install
from runtime.errors import ClusterError, SetupError

SID = 0x100002048CB0000
STANDALONE = "org.apache.ZooKeeperService:name0=StandaloneServer_port15466"
FOLLOWER = "org.apache.ZooKeeperService:name0=ReplicatedServer_id2,name1=replica.2,name2=Follower"
LEADER = "org.apache.ZooKeeperService:name0=ReplicatedServer_id3,name1=replica.3,name2=Leader"
# What `search org.apache.ZooKeeperService:*` lists on a leader with two brokers and two followers connected.
LEADER_BEANS = [
    LEADER,
    f"{LEADER},name3=InMemoryDataTree",
    f'{LEADER},name3=Learner_Connections,name4="127.0.0.1:50738",name5="id:1"',
    f"{LEADER},name3=Connections,name4=127.0.0.1,name5=0x30000209d5c0001",
    f"{LEADER},name3=Connections,name4=127.0.0.1,name5={session_hex(SID)}",
]


def test_session_ids_print_as_zookeeper_prints_them():
    assert session_hex(SID) == "0x100002048cb0000"
    assert session_hex(0x2A) == "0x2a"
    # Server ids >= 128 make negative Java longs; Long.toHexString prints them unsigned.
    assert session_hex(-0x7FFFFFFFFFFFFFFF) == "0x8000000000000001"


def test_object_name_keys_keep_quoted_values_whole():
    name = r'org.apache.ZooKeeperService:name0=S,name1=Connections,name2="0:0:0:0:0:0:0:1",name3="a,b\"c",name4=0x1'
    assert object_name_keys(name) == {
        "name0": "S",
        "name1": "Connections",
        "name2": '"0:0:0:0:0:0:0:1"',
        "name3": r'"a,b\"c"',
        "name4": "0x1",
    }
    assert object_name_keys("org.apache.ZooKeeperService:name0=X") == {"name0": "X"}


def test_zookeeper_path_orders_levels_by_number_not_by_text():
    keys = ",".join(f"name{i}=l{i}" for i in (10, 2, 0, 1, 9, 3, 4, 5, 6, 7, 8))
    assert zookeeper_path(f"d:{keys},type=other") == [f"l{i}" for i in range(11)]


@pytest.mark.parametrize(
    "names, expected",
    [
        (
            [
                STANDALONE,
                f"{STANDALONE},name1=InMemoryDataTree",
                f"{STANDALONE},name1=Connections,name2=127.0.0.1,name3=0x100002048cb0001",
                f"{STANDALONE},name1=Connections,name2=127.0.0.1,name3=0x100002048cb0000",
            ],
            [f"{STANDALONE},name1=Connections,name2=127.0.0.1,name3=0x100002048cb0000"],
        ),
        (
            [f"{FOLLOWER},name3=Connections,name4=127.0.0.1,name5=0x100002048cb0000"],
            [f"{FOLLOWER},name3=Connections,name4=127.0.0.1,name5=0x100002048cb0000"],
        ),
        (LEADER_BEANS, [LEADER_BEANS[-1]]),
        # A learner (peer server) connection or another domain never matches, whatever its last level says.
        (
            [
                f'{LEADER},name3=Learner_Connections,name4="127.0.0.1:1",name5=0x100002048cb0000',
                "other.Domain:name0=S,name1=Connections,name2=127.0.0.1,name3=0x100002048cb0000",
            ],
            [],
        ),
        ([f"{STANDALONE},name1=Connections,name2=127.0.0.1,name3=0x100002048cb00000"], []),  # prefix is not equal
    ],
    ids=["standalone", "follower", "leader", "not-client-connections", "other-session"],
)
def test_connection_mbeans_of_one_session(names, expected):
    assert connection_mbeans(names, SID) == expected


# --------------------------------------------------------------------------- Jolokia over HTTP


class StubJolokia:
    """Answers POSTed Jolokia requests from ``responses[type]`` (a body, or a callable of the request)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.responses: dict = {}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(request)
                answer = stub.responses[request["type"]]
                answer = answer(request) if callable(answer) else answer
                body = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(200)  # Jolokia's HTTP status is 200 even when the JMX call failed
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jolokia/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def jolokia():
    stub = StubJolokia()
    yield stub
    stub.close()


def ok(value, request=None):
    return {"request": request or {}, "value": value, "status": 200, "timestamp": 1795291612}


def not_found(request):
    return {
        "request": request,
        "error_type": "javax.management.InstanceNotFoundException",
        "status": 404,
        "error_type_jmx": "javax.management.InstanceNotFoundException",
        "error": request["mbean"],
    }


def test_terminate_session_execs_terminateSession_on_the_sessions_connection_mbean(jolokia):
    jolokia.responses = {"search": ok(LEADER_BEANS), "exec": lambda r: ok(None, r)}
    assert terminate_session(jolokia.url, SID) == LEADER_BEANS[-1]
    assert jolokia.requests == [
        {"type": "search", "mbean": "org.apache.ZooKeeperService:*"},
        {"type": "exec", "mbean": LEADER_BEANS[-1], "operation": "terminateSession", "arguments": []},
    ]


def test_terminate_session_on_a_node_without_the_session_does_nothing(jolokia):
    jolokia.responses = {"search": ok(LEADER_BEANS[:-1])}
    assert terminate_session(jolokia.url, SID) is None
    assert [r["type"] for r in jolokia.requests] == ["search"]


def test_a_connection_that_closed_between_search_and_exec_is_not_there(jolokia):
    jolokia.responses = {"search": ok(LEADER_BEANS), "exec": not_found}
    assert terminate_session(jolokia.url, SID) is None


def test_a_failing_exec_is_reported_with_jolokias_error(jolokia):
    jolokia.responses = {
        "search": ok(LEADER_BEANS),
        "exec": lambda r: {
            "request": r,
            "status": 500,
            "error_type": "javax.management.MBeanException",
            "error": "boom",
        },
    }
    with pytest.raises(JolokiaError) as info:
        terminate_session(jolokia.url, SID)
    assert info.value.status == 500
    assert "terminateSession" in str(info.value) and "MBeanException" in str(info.value) and "boom" in str(info.value)


def test_an_answer_that_is_not_json_is_reported(jolokia):
    jolokia.responses = {"search": "<html>not jolokia</html>"}
    with pytest.raises(ClusterError, match="not JSON"):
        terminate_session(jolokia.url, SID)


def test_every_http_call_has_a_timeout(jolokia, monkeypatch):
    # A paused ZooKeeper JVM (SIGSTOP) accepts connections but never answers.
    jolokia.responses = {"search": lambda r: (time.sleep(2), ok([]))[1]}
    monkeypatch.setattr(zookeeper, "JOLOKIA_TIMEOUT_S", 0.3)
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=f"Jolokia at {jolokia.url} did not answer 'search'"):
        terminate_session(jolokia.url, SID)
    assert time.monotonic() - t0 < 1.5


def test_nothing_listening_is_reported_with_the_url():
    with pytest.raises(ClusterError, match=r"Jolokia at http://127\.0\.0\.1:1/jolokia/ did not answer"):
        terminate_session("http://127.0.0.1:1/jolokia/", SID)


# --------------------------------------------------------------------------- the agent in the ZooKeeper JVM


def test_jolokia_listens_on_loopback_only_and_obeys_the_policy(tmp_path):
    option = zookeeper.jolokia_javaagent(tmp_path / "agent.jar", 12345, tmp_path / "jolokia-access.xml")
    jar, _, options = option.removeprefix("-javaagent:").partition("=")
    assert jar == str(tmp_path / "agent.jar")
    assert dict(o.split("=", 1) for o in options.split(",")) == {
        "host": "127.0.0.1",
        "port": "12345",
        "discoveryEnabled": "false",
        "policyLocation": f"file://{tmp_path}/jolokia-access.xml",
    }


def test_jolokia_policy_allows_search_and_terminateSession_only():
    policy = ElementTree.fromstring(zookeeper.JOLOKIA_POLICY)
    assert [h.text for h in policy.iterfind("remote/host")] == ["127.0.0.1"]
    assert [c.text for c in policy.iterfind("commands/command")] == ["search"]
    assert [
        (m.findtext("name"), [o.text for o in m.iterfind("operation")], m.find("attribute"))
        for m in policy.iterfind("allow/mbean")
    ] == [("org.apache.ZooKeeperService:*", ["terminateSession"], None)]


# --------------------------------------------------------------------------- the agent's installation


def test_jolokia_agent_before_setup_says_to_run_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    with pytest.raises(SetupError, match=r"Jolokia agent 2\.6\.0 is not installed\. Run `rebalance-lab setup`"):
        install.jolokia_agent()


def test_installing_jolokia_without_maven_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    with pytest.raises(SetupError, match="`mvn` is not on PATH"):
        install.install_jolokia(print)
    assert not (tmp_path / "components" / "jolokia-2.6.0" / ".installed").exists()
