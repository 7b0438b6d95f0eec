"""The common model's values pickle through their slots (metrics/model.py, issue 24: a large
project's adapted values travel pickled from the process that reads the export), and the
state is the one ``dataclasses`` gives frozen slotted classes, so pickles of either form
read back in the other."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from ls_agreement.metrics import model as m

_BOX = m.Box(1.5, 2.0, 30.0, 40.0, 12.0, "car")
VALUES = [
    _BOX,
    m.Polygon(((0.0, 0.0), (4.0, 0.0), (2.0, 3.0)), "roof"),
    m.Keypoint(3.0, 4.0, "eye"),
    m.Mask(2, 3, np.array([0, 2, 4, 1], dtype=np.uint32).tobytes(), "sky"),
    m.Ellipse(5.0, 6.0, 2.0, 1.0, 30.0, "ball"),
    m.Curve(((0.0, 0.0), (1.0, 2.0), (3.0, 1.0)), False, "road", ((0, 1), (1, 2))),
    m.Span(3, 9, "PER", "Alice"),
    m.Relation(0, 1, "knows", True),
    m.Attributed(_BOX, "red"),
    m.Message("user", "hello", 2),
    m.Interval(1.25, 3.5, "speech"),
    m.Track((m.Keyframe(0, True, 1.0, 2.0, 3.0, 4.0, 0.0), m.Keyframe(5, False, 2.0, 2.0, 3.0, 4.0, 0.0)), 9, "car"),
]


def _fields(v):
    return [getattr(v, f.name) for f in dataclasses.fields(v)]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_values_pickle_through_their_slots(value, protocol):
    back = pickle.loads(pickle.dumps(value, protocol=protocol))
    assert type(back) is type(value) and back == value
    assert _fields(back) == _fields(value)            # fields left out of == (a span's text) too
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(back, dataclasses.fields(back)[0].name, None)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_state_is_the_dataclass_state_in_both_directions(value):
    state = value.__getstate__()
    assert list(state) == dataclasses._dataclass_getstate(value)     # the fields' values, in order
    old_style = object.__new__(type(value))
    old_style.__setstate__(dataclasses._dataclass_getstate(value))   # a pickle written before
    assert _fields(old_style) == _fields(value)
    new_style = object.__new__(type(value))
    dataclasses._dataclass_setstate(new_style, state)                # read by the dataclass' own code
    assert _fields(new_style) == _fields(value)
