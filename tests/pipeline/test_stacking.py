"""Per-Example dicts to and from columns: the engine's native ``rows`` and ``stack_dicts``
give what NumPy's indexing and the Python ``stack`` give, item for item and type for type."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from tfrecordkit import _core
from tfrecordkit.pipeline.python_stages import stack

N = 7

COLUMNS = {
    "int64": np.arange(N, dtype=np.int64),
    "float32": np.arange(N, dtype=np.float32) / 3,
    "uint8": np.arange(N, dtype=np.uint8),
    "bool": np.arange(N) % 2 == 0,
    "big_endian": np.arange(N, dtype=">i4"),
    "strided": np.arange(2 * N, dtype=np.float64)[::2],
    "complex": np.arange(N) * 1j,
    "objects": np.array([b"x", None, "s", 3, b"", b"y", b"z"], dtype=object),
    "masked": np.ma.masked_array(np.arange(N), mask=[0, 1] * 3 + [0]),
    "rows_of_two": np.arange(2 * N).reshape(N, 2),
    "unicode": np.array(list("abcdefg")),
    "longer": np.arange(N + 5),
}


def test_rows_are_the_items_numpy_indexing_gives():
    rows = _core.rows(COLUMNS, N)
    assert len(rows) == N
    for i, row in enumerate(rows):
        assert list(row) == list(COLUMNS)
        for key, column in COLUMNS.items():
            want, got = column[i], row[key]
            assert type(got) is type(want), key
            if want is np.ma.masked or type(want) in (bytes, str, int) or want is None:
                assert got is want, key
            else:
                np.testing.assert_array_equal(got, want)


def test_rows_hold_their_objects_and_let_them_go():
    value = b"held" * 10
    columns = {"o": np.array([value] * 64, dtype=object)}
    before = sys.getrefcount(value)
    rows = _core.rows(columns, 64)
    assert sys.getrefcount(value) == before + 64
    del rows
    assert sys.getrefcount(value) == before


BATCHES = {
    "scalars and text": [
        {"i": np.int64(1), "b": b"x", "f": np.float32(0.5), "t": np.bool_(True), "s": "a"},
        {"i": np.int64(2), "b": "y", "f": np.float32(1.5), "t": np.bool_(False), "s": b"b"},
    ],
    "NumPy promotion": [{"a": np.int64(1)}, {"a": np.int32(2)}],
    "Python numbers": [{"a": 1}, {"a": 2}],
    "arrays": [{"a": np.arange(2)}, {"a": np.arange(2)}],
    "ragged": [{"a": np.arange(2)}, {"a": np.arange(3)}],
    "nested": [{"a": {"x": np.int64(1)}}, {"a": {"x": np.int64(2)}}],
    "NumPy bytes": [{"a": np.bytes_(b"x")}, {"a": np.bytes_(b"y")}],
    "complex": [{"a": np.complex64(1j)}, {"a": np.complex64(2)}],
    "dates": [{"a": np.datetime64("2020-01-01")}, {"a": np.datetime64("2020-01-02")}],
    "None": [{"a": None}, {"a": None}],
}


def _plain(x):
    """``x`` as plain data, its arrays as (dtype, list) pairs, to compare batches by."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return (x.dtype, x.tolist())
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return (type(x).__name__, repr(x))


@pytest.mark.parametrize("name", BATCHES)
def test_dicts_stack_natively_as_the_python_stack_does(name):
    elements = BATCHES[name]
    native = _core.stack_dicts(elements, "", stack)
    assert native is not None
    # A tuple of elements takes the Python path alone.
    assert _plain(native) == _plain(stack(tuple(elements)))


def test_numpy_text_scalars_stack_as_text():
    # NumPy's bytes_ and str_ are bytes and str: an object array of them, not an error.
    out = stack([np.bytes_(b"x"), np.str_("y")])
    assert out.dtype == object and out.tolist() == [b"x", "y"]


@pytest.mark.parametrize(
    "elements",
    [[{"a": 1}, {"b": 1}], [{"a": 1}, {"a": 1, "b": 2}], [{"a": 1}, 5], [5, {"a": 1}]],
)
def test_elements_that_are_not_dicts_of_one_set_of_keys_are_left_to_python(elements):
    assert _core.stack_dicts(elements, "", stack) is None
    with pytest.raises(TypeError, match="one structure and one type"):
        stack(elements)


def test_a_key_of_mixed_values_is_stacked_or_refused_by_python_naming_it():
    with pytest.raises(TypeError, match=r"element 1 \(at \['a'\]\) is a bytes, where element 0"):
        stack([{"a": np.int64(1)}, {"a": b"x"}])


class _Key:
    """A key equal to another of its value, whose comparison changes ``victim``."""

    def __init__(self, value, victim=None):
        self.value, self.victim = value, victim

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        if self.victim is not None:
            self.victim[f"added {len(self.victim)}"] = np.int64(0)
        return isinstance(other, _Key) and other.value == self.value


def test_keys_that_change_the_dicts_while_compared_are_stacked_as_they_were():
    first = {_Key(1): np.int64(1)}
    elements = [first, {_Key(1, victim=first): np.int64(2)}]
    out = _core.stack_dicts(elements, "", stack)
    assert [v.tolist() for v in out.values()] == [[1, 2]]
