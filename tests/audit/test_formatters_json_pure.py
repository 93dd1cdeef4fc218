"""``json_pure``: the report as its JSON text holds it, equal to a round trip through ``to_json``."""

from __future__ import annotations

import enum
import json
import math

import pytest

from mleaudit.audit.formatters.json import json_pure, to_json


class _Kind(str, enum.Enum):
    X = "x"


def _deep(levels: int) -> dict:
    value: list = []
    for _ in range(levels):
        value = [value]
    return {"d": value}


@pytest.mark.parametrize("data", [
    {"a": math.nan, "b": [1, (2, math.inf)], "c": {"x": -math.inf}, "t": (1,)},
    {1: "x", "a": 2},
    {10: 1, 9: 2, 100: 3},
    {True: 1}, {None: 1}, {math.nan: 1}, {_Kind.X: 1}, {1.5: "x"},
    {"s": "\ud800 lone", "big": 10**30, "obj": object.__new__(type("Thing", (), {"__str__": lambda self: "thing"}))},
    {"outer": [{"inner": {2: "two"}}]},
    _deep(400),
])
def test_json_pure_equals_the_round_trip_through_to_json(data):
    expected = json.loads(to_json(data))
    got = json_pure(data)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # keys in the same order too
