"""The report's indented JSON (C encoder + numpy line breaks) is ``json.dumps(indent=n)`` byte for byte."""
from __future__ import annotations

import json
import math
import random

import pytest

from ls_agreement.plugin.report.jsonable import dumps, indented

# strings that look like JSON structure, escapes before quotes, non-ASCII
_TRICKY = ["", "a\"b", "\\", "\\\"", "[{,}]", "é\u2028", "x\\\\\"y", "\n\t", "\\\\", "\"", "[]", "{}", ": ,"]


def _random_value(depth: int, rng: random.Random):
    k = rng.random()
    if depth > 4 or k < 0.3:
        return rng.choice([None, True, False, 0, -3, 1.5, 1e-300, 2 ** 70, *_TRICKY])
    if k < 0.65:
        return [_random_value(depth + 1, rng) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["k", *_TRICKY]) + str(n): _random_value(depth + 1, rng) for n in range(rng.randint(0, 4))}


@pytest.mark.parametrize("indent", [0, 1, 3])
def test_indented_equals_json_dumps(indent: int) -> None:
    rng = random.Random(indent)
    for _ in range(1500):
        value = _random_value(0, rng)
        assert indented(value, indent) == json.dumps(value, indent=indent, allow_nan=False), value


def test_dumps_keeps_strict_json_and_other_options() -> None:
    with pytest.raises(ValueError):
        indented([math.nan], 1)
    value = {"b": [1, {"a": []}], "a": "x"}
    assert dumps(value, indent=1) == json.dumps(value, indent=1)
    assert dumps(value, indent=2, sort_keys=True) == json.dumps(value, indent=2, sort_keys=True)
    assert dumps(value) == json.dumps(value)
