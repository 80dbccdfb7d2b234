"""find_iota / materialize_iota and the device-list encodings built on them."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colocated_wire._gen.colocated.v1 import table_pb2
from colocated_wire.entries.device_list import check, first_repeat, lower_device_ids
from colocated_wire.iota import find_iota, materialize_iota
from colocated_wire.limits import DecodeLimits
from colocated_wire.table.check_table import CheckContext


def test_single_device_is_dims_1_perm_0():
    assert find_iota([0]) == ([1], [0])
    assert find_iota([3]) is None  # the caller removes the offset first


def test_row_major_is_one_dim():
    assert find_iota(np.arange(8)) == ([8], [0])


def test_transposed_2d():
    q = np.arange(8).reshape(2, 4).T.reshape(-1)
    assert find_iota(q) == ([2, 4], [1, 0])
    assert np.array_equal(materialize_iota([2, 4], [1, 0]), q)


@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0)])
def test_3d_transposes_roundtrip(perm):
    q = np.arange(24).reshape(2, 3, 4).transpose(perm).reshape(-1)
    found = find_iota(q)
    assert found is not None
    assert np.array_equal(materialize_iota(*found), q)


def test_irregular_has_no_iota():
    assert find_iota([0, 2, 1, 3, 5, 4]) is None
    assert find_iota([1, 0]) is None  # stride must be positive
    assert find_iota([0, 1, 3]) is None
    assert find_iota([]) is None


def test_choice_of_forms():
    assert lower_device_ids(range(16)).WhichOneof("ids") == "iota"
    assert lower_device_ids([5, 1, 9, 2]).WhichOneof("ids") == "plain"
    assert lower_device_ids([1000, 1001, 1003, 1002, 1004]).WhichOneof("ids") == "delta"
    empty = lower_device_ids([])
    assert empty.WhichOneof("ids") == "plain"
    assert empty.SerializeToString() == b"\x12\x00"  # an empty plain is written
    # One device: the iota form is [1], [0], but the plain id is smaller.
    assert lower_device_ids([7]).WhichOneof("ids") == "plain"


def test_offset_iota():
    ids = 100 + np.arange(12).reshape(3, 4).T.reshape(-1)
    msg = lower_device_ids(ids)
    assert msg.WhichOneof("ids") == "iota" and msg.iota.offset == 100
    assert np.array_equal(check(msg, CheckContext(0, "d", None, DecodeLimits())), ids)


def test_million_devices_in_under_64_bytes():
    n = 1 << 20
    ids = np.arange(n).reshape(1024, 64, 16).transpose(1, 0, 2).reshape(-1)
    msg = lower_device_ids(ids)
    size = table_pb2.Entry(device_list=msg).ByteSize()
    assert msg.WhichOneof("ids") == "iota"
    assert size < 64, size
    assert np.array_equal(check(msg, CheckContext(0, "d", None, DecodeLimits())), ids)


def test_delta_and_plain_roundtrip():
    for ids in ([5, 1, 9, 2], [1000, 1001, 1003, 1002, 1004], [2**31 - 1, 0]):
        msg = lower_device_ids(ids)
        assert check(msg, CheckContext(0, "d", None, DecodeLimits())).tolist() == list(ids)


# Brute force: every iota of n elements, by enumerating every factorization and permutation.
def _factorizations(n):
    if n == 1:
        yield []
        return
    for f in range(2, n + 1):
        if n % f == 0:
            for rest in _factorizations(n // f):
                yield [f, *rest]


def _all_iotas(n):
    found = set()
    for dims in _factorizations(n):
        for perm in itertools.permutations(range(len(dims))):
            found.add(tuple(np.arange(n).reshape(dims or [1]).transpose(perm or (0,)).reshape(-1)))
    return found


IOTAS = {n: _all_iotas(n) for n in range(1, 25)}
ITERATIONS = settings(max_examples=300, derandomize=True, deadline=None, database=None)


@st.composite
def _iota_shape(draw):
    dims = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    perm = draw(st.permutations(range(len(dims))))
    return dims, list(perm)


def _reference(dims, perm):
    return np.arange(int(np.prod(dims))).reshape(dims).transpose(perm).reshape(-1)


@ITERATIONS
@given(_iota_shape(), st.integers(0, 1000))
def test_finder_and_expander_against_reference(shape, offset):
    dims, perm = shape
    q = _reference(dims, perm)
    assert np.array_equal(materialize_iota(dims, perm), q)
    found = find_iota(q)
    assert found is not None
    assert np.array_equal(materialize_iota(*found), q)
    msg = lower_device_ids(q + offset)
    assert np.array_equal(check(msg, CheckContext(0, "d", None, DecodeLimits())), q + offset)


@ITERATIONS
@given(st.integers(1, 24).flatmap(lambda n: st.permutations(range(n))))
def test_finder_on_shuffles_is_exactly_the_brute_force(order):
    q = np.array(order)
    found = find_iota(q)
    assert (found is not None) == (tuple(order) in IOTAS[len(order)])
    if found is not None:
        assert np.array_equal(materialize_iota(*found), q)


@ITERATIONS
@given(st.lists(st.integers(0, 40), max_size=30) | st.lists(st.integers(0, 2**31 - 1), max_size=30))
def test_first_repeat_against_reference(ids):
    seen, expected = set(), None
    for k, i in enumerate(ids):
        if i in seen:
            expected = k
            break
        seen.add(i)
    assert first_repeat(np.array(ids, dtype=np.int64)) == expected
