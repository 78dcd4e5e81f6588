"""oracle/extensions.py: the plugins of installed distributions, found by their entry points and
loaded once — and every way a plugin can be unusable, said naming its distribution and entry point.

The distributions here are made in a temporary directory (a `*.dist-info` with METADATA and
entry_points.txt is all importlib.metadata reads) and found there, never on sys.path: each
process finds its plugins once, and these must not become the test process's.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from faults.catalogue import _not_a_fault_kind
from oracle import extensions
from oracle.checks import _not_a_check
from oracle.extensions import CHECKS, DRIVERS, FAULT_KINDS, ExtensionError, Plugin, discover, load
from oracle.protocols import _not_a_driver

REPO = Path(__file__).resolve().parents[2]


def distribution(
    root: Path,
    name: str,
    entry_points: dict[str, dict[str, str]],
    modules: dict[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """A distribution as pip leaves one in site-packages: its modules and a `*.dist-info`."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{ep} = {value}\n" for ep, value in eps.items())
            for group, eps in entry_points.items()
        )
    )
    for path, source in (modules or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source)
    return root


def accept_all(obj, plugin):
    return None


def test_discovery_reads_metadata_only_of_the_labs_groups(tmp_path):
    distribution(
        tmp_path,
        "lab-extras",
        {
            CHECKS: {"b-check": "nowhere.b", "a-check": "nowhere.a"},
            DRIVERS: {"mine": "nowhere.driver:Mine"},
            "console_scripts": {"extras": "nowhere:main"},
        },
    )
    found = discover([str(tmp_path)])  # `nowhere` does not exist: finding imports nothing
    assert [(p.group, p.name, p.value) for p in found] == [
        (CHECKS, "a-check", "nowhere.a"),
        (CHECKS, "b-check", "nowhere.b"),
        (DRIVERS, "mine", "nowhere.driver:Mine"),
    ]
    assert found[2].module == "nowhere.driver" and found[0].distribution == "lab-extras" and found[0].version == "1.0"
    assert found[0].to_dict() == {
        "group": CHECKS,
        "name": "a-check",
        "value": "nowhere.a",
        "distribution": "lab-extras",
        "version": "1.0",
    }


def test_a_distribution_on_the_path_twice_is_found_once(tmp_path):
    for where in ("one", "two"):
        distribution(tmp_path / where, "Lab_Extras", {CHECKS: {"c": f"{where}.c"}})
    found = discover([str(tmp_path / "one"), str(tmp_path / "two")])
    assert [p.value for p in found] == ["one.c"]  # the first, as importlib.metadata.entry_points() has it


def test_plugins_load_in_name_order_once_accepted(tmp_path, monkeypatch):
    distribution(
        tmp_path,
        "lab-extras",
        {CHECKS: {"ext-check": "lab_extras_a.check:CHECK"}},
        {"lab_extras_a/__init__.py": "", "lab_extras_a/check.py": "CHECK = object()\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load(CHECKS, (), accept_all, discover([str(tmp_path)]))
    assert list(loaded) == ["ext-check"] and type(loaded["ext-check"]) is object


def test_a_built_in_name_claimed_names_the_plugin(tmp_path):
    distribution(tmp_path, "lab-extras", {FAULT_KINDS: {"pause": "lab_extras.fault:Pause"}})
    with pytest.raises(ExtensionError) as e:
        load(FAULT_KINDS, ("pause", "crash"), accept_all, discover([str(tmp_path)]))
    assert str(e.value) == (
        "fault kind 'pause' is built in to rebalance-lab, and a plugin claims it too: lab-extras 1.0 (entry point "
        "rebalance_lab.fault_kinds: pause = lab_extras.fault:Pause); a plugin's fault kind needs a name of its own"
    )


def test_a_name_two_plugins_claim_names_both(tmp_path):
    distribution(tmp_path, "lab-extras", {DRIVERS: {"fast": "lab_extras.driver:Fast"}})
    distribution(tmp_path, "other-extras", {DRIVERS: {"fast": "other_extras:Fast"}}, version="2.5")
    with pytest.raises(ExtensionError) as e:
        load(DRIVERS, ("librdkafka", "java"), accept_all, discover([str(tmp_path)]))
    assert str(e.value) == (
        "driver 'fast' is claimed by 2 plugins: lab-extras 1.0 (entry point rebalance_lab.drivers: fast = "
        "lab_extras.driver:Fast) and other-extras 2.5 (entry point rebalance_lab.drivers: fast = other_extras:Fast); "
        "uninstall one, or rename its entry point"
    )


def test_a_plugin_that_fails_to_import_names_its_distribution_and_the_error(tmp_path, monkeypatch):
    distribution(
        tmp_path,
        "lab-extras",
        {CHECKS: {"late": "lab_extras_b.late"}},
        {"lab_extras_b/__init__.py": "", "lab_extras_b/late.py": "import not_installed_anywhere\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ExtensionError) as e:
        load(CHECKS, (), accept_all, discover([str(tmp_path)]))
    assert str(e.value) == (
        "plugin lab-extras 1.0 (entry point rebalance_lab.checks: late = lab_extras_b.late): "
        "failed to load: ModuleNotFoundError: No module named 'not_installed_anywhere'"
    )


def test_an_object_its_registry_refuses_is_said_so(tmp_path, monkeypatch):
    distribution(tmp_path, "lab-extras", {CHECKS: {"odd": "lab_extras_c"}}, {"lab_extras_c.py": "NAME = 'odd'\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ExtensionError) as e:
        load(CHECKS, (), _not_a_check, discover([str(tmp_path)]))
    assert str(e.value) == (
        "plugin lab-extras 1.0 (entry point rebalance_lab.checks: odd = lab_extras_c): not a "
        "check: it has no OPTIONS dict (each option it accepts, with its default; {} for none)"
    )


PLUGIN = Plugin(CHECKS, "toy-commits", "toy.check", "toy", "0.1")


class Check:
    NAME, OPTIONS = "toy-commits", {}

    @staticmethod
    def check(history, options):
        raise AssertionError("never judged here")


def test_what_each_registry_takes(monkeypatch):
    assert _not_a_check(Check, PLUGIN) is None
    assert "one name, said twice" in _not_a_check(type("C", (Check,), {"NAME": "other"}), PLUGIN)
    assert "no check(history, options)" in _not_a_check(type("C", (), {"NAME": "toy-commits", "OPTIONS": {}}), PLUGIN)

    from faults.pause import Pause

    assert _not_a_fault_kind(Pause, replace(PLUGIN, group=FAULT_KINDS, name="pause")) is None
    assert "not a subclass of faults.base.Fault" in _not_a_fault_kind(Check, PLUGIN)
    assert "its Spec's kind is 'pause'" in _not_a_fault_kind(Pause, replace(PLUGIN, name="nap"))

    class Driver:
        @classmethod
        def runs(cls, generation):
            return True

        @classmethod
        def main(cls, argv):
            return 0

    driver = replace(PLUGIN, group=DRIVERS, name="toy", value="toy_driver_module:Driver")
    monkeypatch.setitem(sys.modules, "toy_driver_module", ModuleType("toy_driver_module"))
    assert _not_a_driver(Driver, driver) == (
        "its module has no `main = Driver.main`, which `python -m toy_driver_module` runs (workloads/driver.py)"
    )
    monkeypatch.setattr(sys.modules["toy_driver_module"], "main", Driver.main, raising=False)
    assert _not_a_driver(Driver, driver) is None
    assert "no runs(generation)" in _not_a_driver(object, driver)


def test_a_check_a_run_recorded_from_a_plugin_says_where_it_came_from():
    recorded = [PLUGIN.to_dict()]
    assert extensions.not_installed(CHECKS, "toy-commits", recorded) == (
        "check 'toy-commits' comes from a plugin not installed here: toy 0.1 (entry point rebalance_lab.checks: "
        "toy-commits = toy.check); install it to judge this history"
    )
    assert extensions.not_installed(CHECKS, "typo", recorded) is None
    assert extensions.not_installed(CHECKS, "toy-commits", None) is None  # a history from before plugins


def test_importing_the_oracle_finds_no_plugin():
    """Every process of a run imports the oracle's vocabulary and its table of generations: no
    looking through the installed distributions for that, only when a registry is read."""
    probe = (
        "import oracle, oracle.vocabulary, oracle.protocols, oracle.extensions\n"
        "from oracle.protocols import GENERATIONS\n"
        "assert GENERATIONS['classic-eager'].group_protocol == 'classic'\n"
        "assert oracle.extensions.installed.cache_info().currsize == 0\n"
        "from oracle.checks import CHECKS\n"
        "assert oracle.extensions.installed.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=REPO, check=True)
