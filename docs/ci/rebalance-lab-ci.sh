#!/usr/bin/env bash
# rebalance-lab in CI: the one script a CI job runs (docs/ci.md). From a checkout of the project:
#
#   docs/ci/rebalance-lab-ci.sh [SUITE [SUITE OPTIONS...]]
#
# 1. installs the harness into a virtual environment (pip install -e ., its pinned dependencies);
# 2. `rebalance-lab setup`: Kafka, Toxiproxy, …, into the lab home (~/.cache/rebalance-lab, or
#    $REBALANCE_LAB_HOME): idempotent, a cached lab home makes it a no-op;
# 3. runs the suite (default suites/release.yaml; options after it go to `rebalance-lab suite`,
#    e.g. --only 'smoke*'), writing
#      $RL_CI_OUT/junit.xml   the suite's JUnit XML, at this fixed path
#      $RL_CI_OUT/runs/       the suite's directory and every variant's run directory (upload it);
# 4. exits with the suite's exit code (0 passed, 1 a check failed, 2 bad input or setup, 3 a run
#    broke, 4 incomplete, 130 interrupted); 2 when installing or setting up failed.
#
# Environment (all optional):
#   RL_CI_SUITE    the suite when no argument is given              (default: suites/release.yaml)
#   RL_CI_OUT      where the JUnit file and the run directories go  (default: rebalance-lab-ci)
#   RL_CI_VENV     the virtual environment, made if absent          (default: .venv-rebalance-lab)
#   RL_CI_PYTHON   the Python that makes it (3.11 or newer)         (default: python3)
#   RL_CI_SYSTEM_SITE_PACKAGES=1  the venv sees that Python's packages (an image with them installed)
#   REBALANCE_LAB_HOME            the lab home: cache it between jobs
# Relative paths are relative to the checkout (the directory two levels above this script).
set -uo pipefail

EXIT_BAD_INPUT=2 # runtime/errors.py: bad input or setup

say() { printf 'rebalance-lab-ci: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit "$EXIT_BAD_INPUT"
}

checkout="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" || die "cannot find the checkout"
cd "$checkout" || die "cannot enter $checkout"
[ -f pyproject.toml ] && [ -d harness ] || die "$checkout is not a rebalance-lab checkout"

suite="${1:-${RL_CI_SUITE:-suites/release.yaml}}"
[ $# -gt 0 ] && shift
out="${RL_CI_OUT:-rebalance-lab-ci}"
venv="${RL_CI_VENV:-.venv-rebalance-lab}"
python="${RL_CI_PYTHON:-python3}"
[ -f "$suite" ] || die "suite $suite: no such file (relative paths start at $checkout)"

# What setup needs from the machine and cannot install itself: say all that is missing at once.
missing=()
command -v "$python" >/dev/null || missing+=("$python (Python 3.11+)")
command -v java >/dev/null || missing+=("java (a JDK 17+)")
command -v mvn >/dev/null || missing+=("mvn (Apache Maven: Kafka's jars from Maven Central)")
command -v go >/dev/null || missing+=("go (Go 1.23+: Toxiproxy is built with go install)")
[ ${#missing[@]} -eq 0 ] || die "not on PATH: ${missing[*]}"

# 1. The harness, in its own environment (a runner's system Python may refuse pip: PEP 668).
t0=$SECONDS
if [ ! -x "$venv/bin/python" ]; then
	venv_options=()
	if [ "${RL_CI_SYSTEM_SITE_PACKAGES:-0}" = 1 ]; then
		venv_options+=(--system-site-packages)
		# that Python's pip serves the venv too: no copy of pip to install (seconds)
		"$python" -m pip --version >/dev/null 2>&1 && venv_options+=(--without-pip)
	fi
	"$python" -m venv "${venv_options[@]}" "$venv" || die "could not make the virtual environment $venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e . || die "pip install -e . failed"
lab="$venv/bin/rebalance-lab"
say "harness installed in $venv ($((SECONDS - t0)) s)"

# 2. The components, into the lab home.
t0=$SECONDS
"$lab" setup || die "rebalance-lab setup failed"
say "setup done ($((SECONDS - t0)) s)"

# 3. The suite: its own new directory under $out/runs; the JUnit file is this run's, never a stale one.
junit="$out/junit.xml"
rm -f "$junit"
mkdir -p "$out/runs" || die "cannot make $out/runs"
t0=$SECONDS
"$lab" suite "$suite" --runs-dir "$out/runs" --junit "$junit" "$@"
code=$?
say "suite exit code $code ($((SECONDS - t0)) s)"
if [ -f "$junit" ]; then
	say "JUnit: $junit; run directories: $out/runs"
else
	say "no JUnit written (the suite did not start: its output says why); run directories: $out/runs"
fi
exit "$code"
