"""The str key pool as a trie of key parts (colocated.v1.3), by property (hypothesis):

- dicts of dotted, slashed, non-ASCII and repeating keys (flat and nested) come back equal,
  their keys in code-point order, at the default target (the trie chosen often enough to
  matter, and exactly when it is smaller than front coding) and at 1.2 (never a trie);
- a pool given as a trie in any order decodes exactly when a dict may hold it in that order;
- read_key_trie expands random hand-built tries (repeats of earlier written nodes, labels cut
  inside a UTF-8 character, shared less than they could) as a plain reference does;
- build_key_trie writes the tries of test/vectors/key_tries.json, which
  test/key-trie.test.ts checks TypeScript's buildKeyTrie against.
"""

import base64
import json
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from colocated_wire import DecodeError, deserialize_specs, serialize_specs
from colocated_wire._gen.colocated.v1 import payload_pb2, tree_pb2
from colocated_wire.entries.front_code import front_code
from colocated_wire.entries.key_trie import build_key_trie, read_key_trie, split_key

KEY_TRIES_JSON = Path(__file__).resolve().parents[2] / "test" / "vectors" / "key_tries.json"
NO_LIMIT = 10**9


def _settings(n):
    # Derandomized: the same cases on every run.
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def leaf_of(key: str) -> jax.ShapeDtypeStruct:
    """One leaf per key, told apart by the key, so a key moved from its leaf is seen."""
    return jax.ShapeDtypeStruct((1 + len(key.encode()) % 5, len(key) % 3), np.float32)


# Parts and separators: ASCII words, a word with "_", digits, é, β, CJK, an astral char (above
# U+E000 by code point, below it in UTF-16) and U+E000 / U+FFFD.
ASCII_WORDS = ["a", "b", "w", "mlp", "attn", "up_proj", "12", "0"]
WORDS = ASCII_WORDS + ["é", "β", "日本", "𝔸", "\ue000", "\ufffd", "x𝔸"]
SEPARATORS = [".", "/", "-", ":", " ", "_", ""]
word = st.sampled_from(WORDS)
separator = st.sampled_from(SEPARATORS)
dotted = st.lists(st.tuples(word, separator), min_size=1, max_size=4).map(
    lambda parts: "".join(w if i == len(parts) - 1 else w + s for i, (w, s) in enumerate(parts))
)
any_text = st.text(st.characters(codec="utf-8"), max_size=6)


@st.composite
def key_sets(draw):
    """Keys with structure a trie shares: the same tails under many layer numbers, that whole
    set under several prefixes, keys that are prefixes of others ("a", "a.", "a.b"), the empty
    key, and a few arbitrary keys."""
    prefixes = draw(st.lists(st.tuples(dotted, separator), min_size=1, max_size=3, unique=True))
    layers = draw(st.integers(1, 8))
    layer_sep = draw(separator)
    tails = draw(st.lists(dotted, min_size=1, max_size=5, unique=True))
    keys = {}
    for prefix, sep in prefixes:
        for i in range(layers):
            for tail in tails:
                keys[f"{prefix}{sep}layers{layer_sep}{i}.{tail}"] = None
    every = list(keys)
    for cut in draw(st.lists(st.integers(0, 1000), max_size=4)):
        key = every[cut % len(every)]
        parts = split_key(key)
        head = "".join(parts[: 1 + cut % len(parts)])
        keys[head] = None
        keys[head[:-1]] = None
    if draw(st.booleans()):
        keys[""] = None
    for other in draw(st.lists(st.one_of(dotted, any_text), max_size=4)):
        keys[other] = None
    return list(keys)


def treedef_of(data: bytes) -> tree_pb2.TreeDef:
    return payload_pb2.SpecsPayload.FromString(data).specs.treedef


def dict_keys(tree):
    """Every dict's keys, in preorder."""
    if isinstance(tree, dict):
        yield list(tree)
        for v in tree.values():
            yield from dict_keys(v)


def round_trip(tree, target=None) -> tree_pb2.TreeDef:
    """Encodes `tree` at `target`, decodes it, checks it is the same tree (canonical bytes
    too) with its dicts' keys in code-point order; returns its TreeDef."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    data = serialize_specs(treedef, leaves, target_minor_version=target)
    treedef2, leaves2 = deserialize_specs(data)
    assert treedef2 == treedef
    assert list(leaves2) == leaves
    assert serialize_specs(treedef2, leaves2, target_minor_version=target) == data
    back = jax.tree_util.tree_unflatten(treedef2, leaves2)
    assert back == tree
    for keys in dict_keys(back):
        assert keys == sorted(keys)  # Python's `<` on str: code point by code point
    return treedef_of(data)


def pool_of(t: tree_pb2.TreeDef) -> list[str]:
    """A written TreeDef's str key pool, read plainly from its trie or its front coding."""
    if t.HasField("key_trie"):
        return read_key_trie(t.key_trie, "t", NO_LIMIT, NO_LIMIT)
    keys, prev, at = [], b"", 0
    for i in range(0, len(t.key_sizes), 2):
        prefix, suffix = t.key_sizes[i], t.key_sizes[i + 1]
        prev = prev[:prefix] + t.key_text[at : at + suffix]
        at += suffix
        keys.append(prev.decode())
    return keys


def assert_smaller_chosen(t: tree_pb2.TreeDef) -> None:
    """The pool is a trie exactly when its trie takes fewer bytes than its front coding."""
    pool = pool_of(t)
    text, sizes = front_code(pool)
    as_trie, as_text = tree_pb2.TreeDef(), tree_pb2.TreeDef()
    as_trie.CopyFrom(t)
    as_text.CopyFrom(t)
    for m in (as_trie, as_text):
        m.ClearField("key_trie")
        m.ClearField("key_text")
        m.ClearField("key_sizes")
    as_trie.key_trie.CopyFrom(build_key_trie(pool))
    as_text.key_text = text
    as_text.key_sizes.extend(sizes)
    assert t == (as_trie if t.HasField("key_trie") else as_text)
    assert t.HasField("key_trie") == (as_trie.ByteSize() < as_text.ByteSize())


def test_a_flat_dict_round_trips_with_the_trie_often_chosen():
    used = []

    @_settings(80)
    @given(key_sets())
    def check(keys):
        tree = {k: leaf_of(k) for k in keys}
        t = round_trip(tree)
        used.append(t.HasField("key_trie"))
        if t.HasField("key_trie"):
            assert not t.strings and not t.key_text and not t.key_sizes
        assert_smaller_chosen(t)
        assert not round_trip(tree, 2).HasField("key_trie")

    check()
    assert sum(used) >= 0.5 * len(used)


def _flat(tree):
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, leaves


@st.composite
def nested_dicts(draw, depth=0):
    keys = draw(key_sets())
    kids = draw(st.lists(st.booleans(), max_size=6)) if depth < 2 else []
    return {
        k: draw(nested_dicts(depth + 1)) if i < len(kids) and kids[i] else leaf_of(k)
        for i, k in enumerate(keys)
    }


def test_nested_dicts_round_trip_exactly():
    used = []

    @_settings(40)
    @given(nested_dicts())
    def check(tree):
        t = round_trip(tree)
        used.append(t.HasField("key_trie"))
        assert_smaller_chosen(t)
        assert not round_trip(tree, 2).HasField("key_trie")

    check()
    assert sum(used) >= 0.5 * len(used)


distinct_keys = st.lists(
    st.one_of(dotted, st.sampled_from(["", "a", "a.", "a.b", "a.b.c", "a-", "a0"])),
    min_size=2,
    max_size=10,
    unique=True,
)


@_settings(150)
@given(distinct_keys, st.booleans())
def test_a_pool_written_as_a_trie_in_any_order_is_taken_exactly_when_sorted(keys, keep):
    if keep:
        keys = sorted(keys)
    treedef, leaves = _flat({k: leaf_of("") for k in keys})
    message = payload_pb2.SpecsPayload.FromString(serialize_specs(treedef, leaves))
    t = message.specs.treedef
    assert t.fresh_dict_keys
    for field in ("strings", "key_text", "key_sizes", "key_trie"):
        t.ClearField(field)
    t.key_trie.CopyFrom(build_key_trie(keys))
    data = message.SerializeToString()
    if keys == sorted(keys):
        treedef2, _ = deserialize_specs(data)
        assert list(treedef2.node_data()[1]) == keys
    else:
        with pytest.raises(DecodeError) as info:
            deserialize_specs(data)
        assert info.value.code == "invalid-tree"
        assert info.value.path.startswith("specs.treedef.dict_keys[")


# --- read_key_trie on hand-built tries ------------------------------------------------------

LABEL_TAILS = ["", "a", ".", "a.", "é", "β/", "日本", "𝔸", "\ue000", "\ufffd", "ab", "_", "x𝔸:"]
LABEL_HEADS = ["", "a", "é", "𝔸", "\ue000", "b.", "日"]


@st.composite
def random_tries(draw):
    """A random valid trie: written nodes with 0 to 3 children (a key ending at each leaf, and
    at some inner nodes), repeats of written nodes complete before them (with children or
    not), labels now and then cut inside a UTF-8 character, front-coded sharing any number of
    the bytes they could. Returns (labels as bytes, the KeyTrie)."""
    tail = draw(st.sampled_from(LABEL_TAILS))
    labels = []
    for _ in range(draw(st.integers(1, 7))):
        raw = (draw(st.sampled_from(LABEL_HEADS)) + tail).encode()
        if draw(st.integers(0, 9)) == 0 and len(raw) > 1:
            raw = raw[:-1] if draw(st.booleans()) else raw[1:]
        if raw not in labels:
            labels.append(raw)
    nodes, complete = [], []
    budget = [draw(st.integers(0, 40))]

    def node(depth):
        budget[0] -= 1
        index = len(nodes) // 2
        label = draw(st.integers(0, len(labels) - 1))
        if complete and draw(st.integers(0, 3)) == 0:
            nodes.extend((label, 2 * draw(st.sampled_from(complete)) + 1))
            return
        kids = 0 if depth >= 5 or budget[0] <= 0 else draw(st.integers(0, 3))
        end = 1 if kids == 0 else draw(st.integers(0, 1))
        nodes.extend((label, 4 * kids + 2 * end))
        for _ in range(kids):
            node(depth + 1)
        complete.append(index)

    for _ in range(0 if budget[0] <= 0 else draw(st.integers(0, 4))):
        node(0)
    text, sizes, prev = b"", [], b""
    for raw in labels:
        common = 0
        while common < min(len(prev), len(raw)) and prev[common] == raw[common]:
            common += 1
        p = draw(st.integers(0, common))
        sizes += (p, len(raw) - p)
        text += raw[p:]
        prev = raw
    return labels, tree_pb2.KeyTrie(label_text=text, label_sizes=sizes, nodes=nodes)


def reference_keys(labels, nodes):
    """The keys of a trie, plainly: each node's subtrie found by recursion, a repeat read as
    its source."""
    count = len(nodes) // 2
    end = [0] * count

    def parse(i):
        form = nodes[2 * i + 1]
        nxt = i + 1
        if form % 2 == 0:
            for _ in range(form >> 2):
                nxt = parse(nxt)
        end[i] = nxt
        return nxt

    tops, i = [], 0
    while i < count:
        tops.append(i)
        i = parse(i)
    keys = []

    def expand(i, prefix):
        full = prefix + labels[nodes[2 * i]]
        form = nodes[2 * i + 1]
        body = form // 2 if form % 2 else i
        body_form = nodes[2 * body + 1]
        if body_form & 2:
            keys.append(full)
        c = body + 1
        for _ in range(body_form >> 2):
            expand(c, full)
            c = end[c]

    for i in tops:
        expand(i, b"")
    return keys


def test_read_key_trie_expands_random_tries_as_the_reference_does():
    seen = {"valid": 0, "repeats": 0, "runs": 0}

    @_settings(300)
    @given(random_tries())
    def check(built):
        labels, trie = built
        seen["runs"] += 1
        want = reference_keys(labels, list(trie.nodes))
        try:
            strings = [k.decode() for k in want]
        except UnicodeDecodeError:
            with pytest.raises(DecodeError) as info:
                read_key_trie(trie, "t", NO_LIMIT, NO_LIMIT)
            assert (info.value.path, info.value.code) == ("t.key_trie.label_text", "invalid-value")
            return
        seen["valid"] += 1
        seen["repeats"] += any(x % 2 for x in trie.nodes[1::2])
        assert list(read_key_trie(trie, "t", NO_LIMIT, NO_LIMIT)) == strings

    check()
    assert seen["valid"] > seen["runs"] / 2
    assert seen["repeats"] > seen["runs"] / 4


@_settings(100)
@given(key_sets().flatmap(st.permutations))
def test_read_key_trie_reads_back_what_build_key_trie_writes_in_any_order(keys):
    assert list(read_key_trie(build_key_trie(keys), "t", NO_LIMIT, NO_LIMIT)) == keys


# --- the same tries as TypeScript's: test/vectors/key_tries.json -----------------------------


def _committed():
    return json.loads(KEY_TRIES_JSON.read_text())


@pytest.mark.parametrize("case", _committed(), ids=lambda c: "|".join(c["keys"])[:40] or "none")
def test_build_key_trie_writes_the_committed_trie(case):
    trie = build_key_trie(case["keys"])
    got = {
        "labelText": base64.b64encode(trie.label_text).decode(),
        "labelSizes": list(trie.label_sizes),
        "nodes": list(trie.nodes),
    }
    assert got == {k: case[k] for k in ("labelText", "labelSizes", "nodes")}
    assert list(read_key_trie(trie, "t", NO_LIMIT, NO_LIMIT)) == case["keys"]


def test_the_committed_tries_are_enough_to_matter():
    cases = _committed()
    assert len(cases) >= 20
    assert sum(any(x % 2 for x in c["nodes"][1::2]) for c in cases) > 3
