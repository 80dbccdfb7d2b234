"""Leaf copies (colocated.v1.3), by property (hypothesis) and by example:

- find_leaf_copies then expand_leaf_copies gives the references back, its copies pass the
  checker for the list's length, each copy's three varints take fewer bytes than the references
  it makes (so the written form's varints never outweigh the plain list's), and it finds exactly
  the copies a plain reference of its rule finds (its galloping compare included);
- expand_leaf_copies of arbitrary valid copies is a naive one-leaf-at-a-time expansion;
- check_leaf_copies refuses each kind of bad copy at its exact path, with its code;
- serialize_specs writes copies only for a 1.3 reader, and both forms decode to the same leaves;
  a payload with copies goes through TypeScript and back to the same bytes and objects;
- find_leaf_copies writes the copies of test/vectors/leaf_copies.json, which
  test/leaf-copies.test.ts checks TypeScript's findLeafCopies against.
"""

import json
import subprocess
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from test_key_trie import _settings
from test_vectors import _typescript_cli, _vector

from colocated_wire import (
    SCHEMA_MINOR_VERSION,
    DecodeError,
    deserialize_specs,
    serialize_specs,
)
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.entries.leaf_copies import (
    LEAF_COPIES_SINCE,
    MIN_COPY,
    check_leaf_copies,
    expand_leaf_copies,
    find_leaf_copies,
)

LEAF_COPIES_JSON = Path(__file__).resolve().parents[2] / "test" / "vectors" / "leaf_copies.json"


def varint_size(value: int) -> int:
    """The bytes a uint32 takes as a varint."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def varint_bytes(values) -> int:
    return sum(map(varint_size, values))


def triples(copies):
    """The copies as (gap, distance, count) triples."""
    return [tuple(copies[c : c + 3]) for c in range(0, len(copies), 3)]


def naive_expand(written, copies):
    """Expands copies one leaf at a time, as the schema words it."""
    out, w = [], 0
    for gap, distance, count in triples(copies):
        for _ in range(gap):
            out.append(written[w])
            w += 1
        for _ in range(count):
            out.append(out[-distance])
    return out + list(written[w:])


def reference_find(refs):
    """The writer's rule, plainly: at each position (not inside a copy) with MIN_COPY references
    left, the latest earlier such position whose first MIN_COPY references are the same; the
    copy as long as the two agree, compared one by one (no galloping), taken when its varints
    (the first copy's with 2 bytes more, the field's tag and length) are fewer bytes than the
    references it makes."""
    n = len(refs)
    if n <= MIN_COPY:
        return list(refs), []
    latest, leaves, copies = {}, [], []
    gap = i = 0
    while i + MIN_COPY <= n:
        run = ",".join(map(str, refs[i : i + MIN_COPY]))
        p = latest.get(run)
        latest[run] = i
        if p is not None:
            length = 0
            while i + length < n and refs[p + length] == refs[i + length]:
                length += 1
            field = 0 if copies else 2
            cost = field + varint_size(gap) + varint_size(i - p) + varint_size(length)
            if cost < varint_bytes(refs[i : i + length]):
                copies += (gap, i - p, length)
                gap = 0
                i += length
                continue
        leaves.append(refs[i])
        gap += 1
        i += 1
    return leaves + list(refs[i:]), copies


# --- reference lists with repeats --------------------------------------------------------------
# Fresh references, earlier runs again (overlapping what they make, so cycles), over alphabets
# of one-, two-, three- and five-byte references.

ALPHABETS = [
    lambda v: v % 2,
    lambda v: v % 5,
    lambda v: v % 40,
    lambda v: 120 + v % 20,  # one and two bytes
    lambda v: 16_380 + v % 10,  # two and three bytes
    lambda v: 0xFFFF_FFF0 + v % 16,  # five bytes
    lambda v: v % 2**32,
]

chunk = st.one_of(
    st.tuples(st.just("fresh"), st.lists(st.integers(0, 2**31), min_size=1, max_size=8)),
    st.tuples(st.integers(0, 2**31), st.integers(1, 60)),
    # Distinct two-byte references, so gaps and distances of 128 and more.
    st.tuples(st.just("stretch"), st.integers(100, 300)),
)


def _build_refs(chunks, alphabet):
    out, stretched = [], 0
    for c in chunks:
        if c[0] == "stretch":
            out += range(0x80 + stretched, 0x80 + stretched + c[1])
            stretched += c[1]
        elif c[0] == "fresh" or not out:
            out += [alphabet(v) for v in (c[1] if c[0] == "fresh" else [c[0]])]
        else:
            back, length = c
            start = len(out) - 1 - back % len(out)
            for k in range(length):
                out.append(out[start + k])
    return out


ref_lists = st.builds(
    _build_refs, st.lists(chunk, max_size=30), st.sampled_from(ALPHABETS)
) | st.lists(st.integers(0, 3), max_size=60)


@_settings(120)
@given(ref_lists)
def test_find_then_expand_gives_the_references_back_and_passes_the_checker(refs):
    leaves, copies = find_leaf_copies(refs)
    assert list(expand_leaf_copies(leaves, copies)) == refs
    assert naive_expand(leaves, copies) == refs
    check_leaf_copies(copies, len(leaves), len(refs), "specs", LEAF_COPIES_SINCE)
    check_leaf_copies(copies, len(leaves), len(refs), "specs", SCHEMA_MINOR_VERSION)


@_settings(120)
@given(ref_lists)
def test_a_copy_is_taken_only_when_its_varints_are_fewer_bytes(refs):
    leaves, copies = find_leaf_copies(refs)
    made = 0
    for gap, distance, count in triples(copies):
        made += gap
        assert count >= MIN_COPY and distance >= 1
        field = 2 if made == gap else 0  # the first copy pays for the field
        cost = field + varint_size(gap) + varint_size(distance) + varint_size(count)
        assert cost < varint_bytes(refs[made : made + count])
        made += count
    if copies:
        assert varint_bytes(leaves) + varint_bytes(copies) + 2 < varint_bytes(refs)
    else:
        assert leaves == refs


@_settings(120)
@given(ref_lists)
def test_find_gives_the_copies_of_its_rule_as_a_plain_reference_does(refs):
    assert find_leaf_copies(refs) == reference_find(refs)


def test_a_cycle_of_16_over_10000_leaves_is_its_first_cycle_and_one_copy():
    refs = [i % 16 for i in range(10_000)]
    assert find_leaf_copies(refs) == (list(range(16)), [16, 16, 9984])


def test_the_galloping_compare_stops_where_the_runs_part():
    # Runs that agree for every length around the compare's steps (16, 32, ...), then part.
    # (A first copy of 5 or fewer costs as much as its references: the field takes 2 bytes.)
    for length in (6, 7, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 1000, 1023, 1024, 1025):
        run = list(range(1, length + 1))
        refs = run + [0] + run + [10**6] + run
        leaves, copies = find_leaf_copies(refs)
        assert copies[1:3] == [length + 1, length], length
        assert list(expand_leaf_copies(leaves, copies)) == refs


# --- arbitrary valid copies, and each way of breaking one --------------------------------------

copy_ops = st.tuples(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 2**31),
            st.integers(1, 12) | st.integers(1, 300),
        ),
        max_size=8,
    ),
    st.integers(0, 4),
)


def _valid_copies(ops_tail):
    """(written, copies, leaf_count, before): each written leaf a number of its own, so a leaf
    made from the wrong place is seen; before each copy, the written leaves read and the leaves
    made before its gap."""
    ops, tail = ops_tail
    written, copies, before = [], [], []
    made = 0
    for gap, back, count in ops:
        gap = 1 if made == 0 and gap == 0 else gap
        before.append((len(written), made))
        written += range(1000 + len(written), 1000 + len(written) + gap)
        made += gap
        copies += (gap, 1 + back % made, count)
        made += count
    written += range(1000 + len(written), 1000 + len(written) + tail)
    return written, copies, made + tail, before


copies_cases = copy_ops.map(_valid_copies)


def _refusal(copies, written, leaf_count, minor=3):
    try:
        check_leaf_copies(copies, written, leaf_count, "specs", minor)
    except DecodeError as e:
        return (e.path, e.code)
    return "accepted"


@_settings(200)
@given(copies_cases)
def test_expanding_arbitrary_valid_copies_is_the_naive_expansion(case):
    written, copies, leaf_count, _ = case
    check_leaf_copies(copies, len(written), leaf_count, "specs", 3)
    made = list(expand_leaf_copies(written, copies))
    assert len(made) == leaf_count
    assert made == naive_expand(written, copies)


FAULTS = ["numbers", "gap", "distance0", "distance_far", "count0", "count_past", "short"]


@_settings(200)
@given(
    copies_cases.filter(lambda c: c[1]),
    st.integers(0, 2**31),
    st.sampled_from(FAULTS),
    st.integers(1, 1000),
)
def test_each_kind_of_bad_copy_is_refused_at_its_path_with_its_code(case, pick, fault, k):
    written, copies, leaf_count, before = case
    c = pick % len(before)
    read, made = before[c]
    bad, count, at = list(copies), leaf_count, "specs.leaf_copies"
    if fault == "numbers":
        del bad[3 * c + k % 3 : 3 * c + k % 3 + 1 + k % 2]  # one or two numbers fewer
        want = (at, "invalid-tree")
    elif fault == "gap":
        bad[3 * c] = len(written) - read + k
        want = (f"{at}[{3 * c}]", "invalid-tree")
    elif fault == "distance0":
        bad[3 * c + 1] = 0
        want = (f"{at}[{3 * c + 1}]", "forward-reference")
    elif fault == "distance_far":
        bad[3 * c + 1] = made + bad[3 * c] + k
        want = (f"{at}[{3 * c + 1}]", "reference-out-of-range")
    elif fault == "count0":
        bad[3 * c + 2] = 0
        want = (f"{at}[{3 * c + 2}]", "invalid-tree")
    elif fault == "count_past":
        bad[3 * c + 2] = leaf_count + k
        want = (f"{at}[{3 * c + 2}]", "invalid-tree")
    else:
        count = leaf_count + k
        want = ("specs.leaves", "invalid-tree")
    assert _refusal(bad, len(written), count) == want
    # Under a header of 1.2 any copy is refused first, whatever is wrong with it.
    assert _refusal(bad, len(written), count, 2) == (at, "unsupported-version")
    assert _refusal(copies, len(written), leaf_count, 2) == (at, "unsupported-version")


def test_a_tree_of_fewer_leaves_than_made_is_refused_at_the_copy_that_passes_it():
    # One written leaf, then copies of 3 and 4: a tree of 5 is passed at the second copy.
    assert _refusal([1, 1, 3, 0, 2, 4], 1, 5) == ("specs.leaf_copies[5]", "invalid-tree")
    assert _refusal([1, 1, 3, 0, 2, 4], 1, 8) == "accepted"
    # Written leaves left after the copies count too: passed at the first copy.
    assert _refusal([1, 1, 3], 3, 5) == ("specs.leaf_copies[2]", "invalid-tree")
    assert _refusal([1, 1, 3], 3, 6) == "accepted"


def test_without_copies_the_written_leaves_are_the_trees_under_any_header():
    assert _refusal([], 7, 7, 0) == "accepted"
    assert _refusal([], 7, 9, 2) == ("specs.leaves", "invalid-tree")


# --- through serialize_specs and deserialize_specs ---------------------------------------------


def _sixteen(mesh_2x4):
    """16 distinct specs: four shapes, each under four shardings of a 2x4 mesh."""
    specs = [P("x", "y"), P("y", "x"), P("x"), P()]
    return [
        jax.ShapeDtypeStruct(
            (8, 4 * (1 + i // 4)), np.float32, sharding=NamedSharding(mesh_2x4, specs[i % 4])
        )
        for i in range(16)
    ]


@pytest.fixture(scope="module")
def cycle(mesh_2x4):
    """A 10,000-leaf list cycling 16 specs: (treedef, leaves, the 16)."""
    sixteen = _sixteen(mesh_2x4)
    leaves, treedef = jax.tree_util.tree_flatten([sixteen[i % 16] for i in range(10_000)])
    return treedef, leaves, sixteen


def _assert_the_cycle(got, cycle):
    treedef, _, sixteen = cycle
    got_treedef, got_leaves = got
    assert got_treedef == treedef
    assert len(got_leaves) == 10_000
    assert list(got_leaves[:16]) == sixteen
    # Each leaf is its table entry's one object, copies included.
    assert len({id(x) for x in got_leaves}) == 16
    assert all(leaf is got_leaves[i % 16] for i, leaf in enumerate(got_leaves))


def test_a_10000_leaf_cycle_is_written_as_copies_for_1_3_and_plainly_for_1_2(cycle):
    treedef, leaves, _ = cycle
    latest = serialize_specs(treedef, leaves)
    old = serialize_specs(treedef, leaves, target_minor_version=2)
    a = payload_pb2.SpecsPayload.FromString(latest)
    b = payload_pb2.SpecsPayload.FromString(old)
    assert (a.header.minor_version, b.header.minor_version) == (SCHEMA_MINOR_VERSION, 2)
    assert len(a.specs.leaves) == 16 and list(a.specs.leaf_copies) == [16, 16, 9984]
    assert len(b.specs.leaves) == 10_000 and list(b.specs.leaf_copies) == []
    assert list(expand_leaf_copies(a.specs.leaves, a.specs.leaf_copies)) == list(b.specs.leaves)
    assert len(latest) < len(old) - 9000
    _assert_the_cycle(deserialize_specs(latest), cycle)
    _assert_the_cycle(deserialize_specs(old), cycle)


def _refused_with(cycle, edit):
    """The 10,000-leaf payload's message, changed by `edit`, decoded: (path, code)."""
    treedef, leaves, _ = cycle
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(treedef, leaves))
    edit(msg)
    try:
        deserialize_specs(msg.SerializeToString())
    except DecodeError as e:
        return (e.path, e.code)
    return "accepted"


def _set(field, i, value):
    def edit(msg):
        getattr(msg.specs, field)[i] = value

    return edit


def test_deserialize_specs_refuses_bad_copies_at_their_paths(cycle):
    at = "specs.leaf_copies"
    assert _refused_with(cycle, lambda m: None) == "accepted"
    assert _refused_with(cycle, lambda m: m.specs.leaf_copies.append(1)) == (at, "invalid-tree")
    assert _refused_with(cycle, _set("leaf_copies", 0, 17)) == (f"{at}[0]", "invalid-tree")
    assert _refused_with(cycle, _set("leaf_copies", 1, 0)) == (f"{at}[1]", "forward-reference")
    out_of_range = (f"{at}[1]", "reference-out-of-range")
    assert _refused_with(cycle, _set("leaf_copies", 1, 17)) == out_of_range
    assert _refused_with(cycle, _set("leaf_copies", 2, 0)) == (f"{at}[2]", "invalid-tree")
    assert _refused_with(cycle, _set("leaf_copies", 2, 9985)) == (f"{at}[2]", "invalid-tree")
    assert _refused_with(cycle, _set("leaf_copies", 2, 9983)) == ("specs.leaves", "invalid-tree")

    def one_written_for_one_copied(msg):
        msg.specs.leaf_copies[2] = 9983
        msg.specs.leaves.append(msg.specs.leaves[0])

    assert _refused_with(cycle, one_written_for_one_copied) == "accepted"

    def minor_2(msg):
        msg.header.minor_version = 2

    assert _refused_with(cycle, minor_2) == (at, "unsupported-version")


def test_the_committed_typescript_vector_has_copies_and_lifts_to_its_case(devices):
    data = _vector("leaf_copies_1_3")
    assert len(payload_pb2.SpecsPayload.FromString(data).specs.leaf_copies) >= 6
    f32 = [jax.ShapeDtypeStruct((n,), np.float32) for n in range(1, 10)]
    cycle = f32[:5]
    leaves, treedef = jax.tree_util.tree_flatten(
        {"cycle": cycle * 6, "tail": [f32[7], *cycle[:4], f32[8]]}
    )
    got_treedef, got_leaves = deserialize_specs(data)
    assert got_treedef == treedef
    assert list(got_leaves) == leaves


def test_python_copies_through_typescript_and_back(cycle, tmp_path):
    """Python's 10,000-leaf payload with copies, read and written again by TypeScript: the
    same bytes, which lift to the same tree and objects."""
    treedef, leaves, _ = cycle
    data = serialize_specs(treedef, leaves)
    assert payload_pb2.SpecsPayload.FromString(data).specs.leaf_copies
    written = tmp_path / "python"
    written.mkdir()
    out = tmp_path / "typescript"
    out.mkdir()
    (written / "cycle.bin").write_bytes(data)
    cli = [*_typescript_cli(), "canonicalize", "--out-dir", str(out), str(written / "cycle.bin")]
    subprocess.run(cli, check=True)
    again = (out / "cycle.bin").read_bytes()
    assert again == data
    _assert_the_cycle(deserialize_specs(again), cycle)


# --- the same copies as TypeScript's: test/vectors/leaf_copies.json ----------------------------


def _committed():
    return json.loads(LEAF_COPIES_JSON.read_text())


@pytest.mark.parametrize("case", _committed(), ids=lambda c: c["name"])
def test_find_leaf_copies_writes_the_committed_copies(case):
    leaves, copies = find_leaf_copies(case["refs"])
    assert {"leaves": leaves, "copies": copies} == {k: case[k] for k in ("leaves", "copies")}
    assert list(expand_leaf_copies(leaves, copies)) == case["refs"]
    check_leaf_copies(copies, len(leaves), len(case["refs"]), "specs", 3)


def test_the_committed_lists_are_enough_to_matter():
    cases = _committed()
    assert len(cases) >= 40
    assert sum(bool(c["copies"]) for c in cases) > 25
    assert sum(any(n > d for _, d, n in triples(c["copies"])) for c in cases) > 5
    assert sum(len(c["refs"]) > 4 and not c["copies"] for c in cases) > 3
    assert any(max(c["refs"], default=0) >= 2**31 for c in cases)
