"""The topic names Kafka takes: what a scenario's topics and a create-topic fault's topic may
be called, and which names cannot stand side by side on one cluster."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

TOPIC_NAME_MAX = 249  # Kafka's limit


def _a_name_kafka_takes(name: str) -> str:
    if name in (".", ".."):
        raise ValueError(f"Kafka refuses a topic named {name!r}")
    if name.startswith("__"):  # __consumer_offsets, __transaction_state, …: the run would write into them
        raise ValueError("a name starting with '__' is one of Kafka's internal topics")
    return name


TopicName = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,200}$"), AfterValidator(_a_name_kafka_takes)]


def topic_set_problems(names: list[str]) -> list[tuple[int, str]]:
    """Topics Kafka would not create side by side: (index, reason)."""
    problems, seen = [], {}
    for i, name in enumerate(names):
        # Kafka refuses a second topic whose name differs only by '.' against '_' (metric names).
        other = seen.setdefault(name.replace(".", "_"), name)
        if other != name:
            problems.append((i, f"{name!r} collides with topic {other!r} ('.' and '_' are one to Kafka)"))
        elif name in names[:i]:
            problems.append((i, f"topic {name!r} is declared twice"))
    return problems
