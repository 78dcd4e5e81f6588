"""Fixtures for the Spark analysis tests.

One Spark session per test process (a JVM takes seconds to start): every in-process
analysis shares it. Tests that need real run directories make them once per module
with the integration fixtures (real ZooKeeper / Kafka brokers), and are marked
`integration` like the tests under tests/integration.
"""

from __future__ import annotations

import pytest

# The real-cluster fixtures, shared with tests/integration (`module_run` runs a scenario
# once per module, as `run` does, on a shared cluster; `components_installed` fails the test, not skips it,
# when `rebalance-lab setup` has not run).
from tests.integration.conftest import components_installed, module_run, shared_clusters  # noqa: F401


def pytest_configure(config):
    config.addinivalue_line("markers", "analysis: the Spark analysis of run histories (starts a JVM)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/analysis" in str(item.fspath):
            item.add_marker(pytest.mark.analysis)


@pytest.fixture(scope="session")
def spark():
    from analysis.session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()
