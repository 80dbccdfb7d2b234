"""The str key pool as a trie of key parts (colocated.v1.3).

Flat dicts keyed by dotted paths ("params.model.layers.12.mlp.up_proj.weight",
as Hugging Face checkpoints and `flax.traverse_util.flatten_dict(sep=".")`
make them) repeat each key's tail under every layer and the whole key set
under each optimizer moment; front coding writes those again each time. A
trie writes each key as a path of labels, and a subtrie equal to one written
before as a repeat of it. The writer cuts a key after each ASCII character
that is not a letter or "_" (a separator or a digit); the reader takes any
labels, so no separator is special. src/entries/key-trie.ts is the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from colocated_wire._gen.colocated.v1 import tree_pb2
from colocated_wire.entries.front_code import front_code
from colocated_wire.errors import DecodeError

# After an ASCII character that is not a letter or "_" (a separator or a digit).
_CUT = re.compile(r"(?<=[\x00-@\[-^`{-\x7f])")


def split_key(key: str) -> list[str]:
    """The parts of a key, each ending after a separator or a digit (so numbered keys, "p017"
    or "layers.17", share their digits' subtries); the empty key is one empty part."""
    parts = _CUT.split(key)
    if len(parts) > 1 and not parts[-1]:
        parts.pop()
    return parts


def build_key_trie(keys: Sequence[str]) -> tree_pb2.KeyTrie:
    """The trie of a pool of distinct keys whose preorder is the pool's order: each key shares
    the parts before its last with the key before it where they agree, and its last part is a
    new node. A node with children whose key end and children equal an earlier written node's
    is a repeat of that node."""
    label_ids: dict[str, int] = {}
    labels: list[str] = []
    label: list[int] = []  # per node, in preorder (the order they are made in)
    ends: list[int] = []
    children: list[list[int]] = []
    top: list[int] = []
    path: list[int] = []
    for key in keys:
        parts = split_key(key)
        last = len(parts) - 1
        depth = 0
        while depth < last and depth < len(path) and labels[label[path[depth]]] == parts[depth]:
            depth += 1
        del path[depth:]
        for d in range(depth, last + 1):
            node = len(label)
            part = parts[d]
            if part not in label_ids:
                label_ids[part] = len(labels)
                labels.append(part)
            label.append(label_ids[part])
            ends.append(0)
            children.append([])
            (children[path[d - 1]] if d else top).append(node)
            path.append(node)
        ends[path[last]] = 1
    # Each node's subtrie by value, children before parents.
    n = len(label)
    shapes: dict[tuple[int, ...], int] = {}
    shape = [0] * n
    subtrie_end = [0] * n
    for node in range(n - 1, -1, -1):
        kids = children[node]
        sig = (ends[node], *[x for c in kids for x in (label[c], shape[c])])
        shape[node] = shapes.setdefault(sig, len(shapes))
        subtrie_end[node] = subtrie_end[kids[-1]] if kids else node + 1
    # Written in preorder: a node with children whose subtrie was written before repeats it.
    written_at: dict[int, int] = {}
    used: dict[int, int] = {}
    order: list[str] = []
    nodes: list[int] = []
    node = 0
    while node < n:
        lid = label[node]
        if lid not in used:
            used[lid] = len(order)
            order.append(labels[lid])
        index = len(nodes) // 2
        source = written_at.get(shape[node])
        if children[node] and source is not None:
            nodes += (used[lid], 2 * source + 1)
            node = subtrie_end[node]
            continue
        nodes += (used[lid], 4 * len(children[node]) + 2 * ends[node])
        if children[node]:
            written_at[shape[node]] = index
        node += 1
    text, sizes = front_code(order)
    return tree_pb2.KeyTrie(label_text=text, label_sizes=sizes, nodes=nodes)


def read_key_trie(trie: tree_pb2.KeyTrie, path: str, max_keys: int, max_bytes: int) -> list[str]:
    """A trie's keys in preorder. Every label and node is checked, and the keys counted and
    measured against the limits from sizes known when each node is met, before any key is
    built: a repeat of a repeat of ... costs one step per written node to refuse."""
    at = f"{path}.key_trie"
    labels = _read_labels(trie, at, max_bytes)
    nodes = trie.nodes
    if len(nodes) % 2:
        raise DecodeError(f"{at}.nodes", "invalid-tree", f"{len(nodes)} numbers, two per node")
    count = len(nodes) // 2
    end = [-1] * count
    keys = [0] * count  # keys in the node's subtrie
    size = [0] * count  # their bytes from the node's label on
    open_: list[int] = []
    awaited: list[int] = []
    total = [0, 0]  # the trie's keys and bytes

    def finish(node: int, last: int) -> None:
        parent = open_[-1] if open_ else -1
        plen = len(labels[nodes[2 * parent]]) if parent >= 0 else 0
        all_keys = (total[0] if parent < 0 else keys[parent]) + keys[node]
        all_bytes = (total[1] if parent < 0 else size[parent]) + size[node] + keys[node] * plen
        if all_keys > max_keys:
            detail = f"the trie holds more than the limit of {max_keys} keys"
            raise DecodeError(f"{at}.nodes[{2 * last + 1}]", "limit-exceeded", detail)
        if all_bytes > max_bytes:
            detail = f"the keys expand past the limit of {max_bytes} bytes"
            raise DecodeError(f"{at}.nodes[{2 * last + 1}]", "limit-exceeded", detail)
        if parent < 0:
            total[0], total[1] = all_keys, all_bytes
        else:
            keys[parent], size[parent] = all_keys, all_bytes

    for i in range(count):
        lid, form = nodes[2 * i], nodes[2 * i + 1]
        if lid >= len(labels):
            detail = f"label {lid} of {len(labels)}"
            raise DecodeError(f"{at}.nodes[{2 * i}]", "reference-out-of-range", detail)
        if form % 2:
            source = form // 2
            if source >= i or end[source] < 0 or nodes[2 * source + 1] % 2:
                detail = f"node {i} repeats node {source}, which is not a written node before it"
                raise DecodeError(f"{at}.nodes[{2 * i + 1}]", "forward-reference", detail)
            keys[i] = keys[source]
            grown = len(labels[lid]) - len(labels[nodes[2 * source]])
            size[i] = size[source] + keys[source] * grown
        else:
            kids, key_ends = form // 4, (form >> 1) & 1
            if not kids and not key_ends:
                detail = f"node {i} has no key and no children"
                raise DecodeError(f"{at}.nodes[{2 * i + 1}]", "invalid-tree", detail)
            if kids > count - 1 - i:
                detail = f"node {i} has {kids} children, {count - 1 - i} nodes follow it"
                raise DecodeError(f"{at}.nodes[{2 * i + 1}]", "invalid-tree", detail)
            keys[i] = key_ends
            size[i] = key_ends * len(labels[lid])
            if kids:
                open_.append(i)
                awaited.append(kids)
                continue
        end[i] = i + 1
        finish(i, i)
        while open_:
            awaited[-1] -= 1
            if awaited[-1]:
                break
            parent = open_.pop()
            awaited.pop()
            end[parent] = i + 1
            finish(parent, i)
    if open_:
        detail = f"node {open_[-1]} awaits {awaited[-1]} more children"
        raise DecodeError(f"{at}.nodes", "invalid-tree", detail)
    return _decode(_write_keys(nodes, labels, end), f"{at}.label_text")


def _read_labels(trie: tree_pb2.KeyTrie, at: str, max_bytes: int) -> list[bytes]:
    """The front-coded labels, every size checked before a label is built."""
    text, sizes = trie.label_text, trie.label_sizes
    if len(sizes) % 2:
        raise DecodeError(f"{at}.label_sizes", "invalid-tree", f"{len(sizes)} sizes, two per label")
    labels: list[bytes] = []
    prev = b""
    read = total = 0
    for i in range(len(sizes) // 2):
        prefix, suffix = sizes[2 * i], sizes[2 * i + 1]
        if prefix > len(prev):
            detail = f"label {i} shares {prefix} bytes with a label of {len(prev)}"
            raise DecodeError(f"{at}.label_sizes[{2 * i}]", "invalid-tree", detail)
        if suffix > len(text) - read:
            detail = f"label {i} takes {suffix} bytes, label_text has {len(text) - read} left"
            raise DecodeError(f"{at}.label_sizes[{2 * i + 1}]", "invalid-tree", detail)
        total += prefix + suffix
        if total > max_bytes:
            detail = f"the labels expand past the limit of {max_bytes} bytes"
            raise DecodeError(f"{at}.label_sizes[{2 * i}]", "limit-exceeded", detail)
        prev = prev[:prefix] + text[read : read + suffix]
        read += suffix
        labels.append(prev)
    if read != len(text):
        detail = f"{len(text) - read} bytes of label_text are left over"
        raise DecodeError(f"{at}.label_text", "invalid-tree", detail)
    return labels


def _write_keys(nodes: Sequence[int], labels: list[bytes], end: list[int]) -> list[bytes]:
    """A checked trie's keys in preorder, as UTF-8 bytes."""
    out: list[bytes] = []
    # Frames of [next node, end of its siblings, the path before them].
    frames: list[list] = [[0, len(nodes) // 2, b""]]
    while frames:
        frame = frames[-1]
        node = frame[0]
        if node == frame[1]:
            frames.pop()
            continue
        frame[0] = end[node]
        full = frame[2] + labels[nodes[2 * node]]
        form = nodes[2 * node + 1]
        body = form // 2 if form % 2 else node
        body_form = nodes[2 * body + 1]
        if body_form & 2:
            out.append(full)
        if body_form >= 4:
            frames.append([body + 1, end[body], full])
    return out


def _decode(raw: list[bytes], path: str) -> list[str]:
    keys: list[str] = []
    for k, key in enumerate(raw):
        try:
            keys.append(key.decode())
        except UnicodeDecodeError:
            raise DecodeError(path, "invalid-value", f"key {k} is not UTF-8") from None
    return keys
