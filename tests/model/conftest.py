"""Hypothesis profiles for the model-based tests (test_group_model.py's docstring has the commands).

`ci` (the default): derandomized — the same examples on every run, so CI is reproducible
— and sized so the module takes well under 60 s on a busy 2-core machine. `long`
(`HYPOTHESIS_PROFILE=long`): many more examples, randomly chosen, for an exploratory run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI does not shrink a failure (it could take minutes): the blob printed with it reproduces it
# (@reproduce_failure), and the long profile shrinks.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    stateful_step_count=40,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    **_COMMON,
)
# long: MODEL_EXAMPLES overrides the number of examples (per property)
settings.register_profile(
    "long", max_examples=int(os.environ.get("MODEL_EXAMPLES", 1000)), stateful_step_count=60, **_COMMON
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter):
    from .test_group_model import STATS

    if STATS:
        terminalreporter.write_sep("-", "model-based histories")
        for key in sorted(STATS):
            terminalreporter.write_line(f"{key:<40} {STATS[key]}")
