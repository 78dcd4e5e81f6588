"""What every scenario entry is: strict, frozen, finite (faults/base.py and the scenario build on it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

DAY_S = 86_400  # the longest run, and so the longest anything in it can last


class Strict(BaseModel):
    """A scenario's entries: unknown keys are errors, values frozen, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
