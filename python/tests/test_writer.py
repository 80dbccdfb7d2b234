"""A payload's writer (colocated.v1.3): written by default exactly when a payload holds a
pickle, left out for an older target, kept when a decoded payload is written again, and a
reader that would unpickle refuses the pickles of another Python or cloudpickle first."""

import sys

import cloudpickle
import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from colocated_wire import (
    DecodeError,
    UnloadedFunction,
    Writer,
    describe_writer,
    deserialize_program,
    deserialize_specs,
    deserialize_value,
    payload_writer,
    serialize_program,
    serialize_specs,
    serialize_value,
    this_writer,
)
from colocated_wire._gen.colocated.v1 import payload_pb2

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _specs(devices):
    mesh = Mesh(np.array(devices[:8]).reshape(2, 4), ("x", "y"))
    spec = jax.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(mesh, P("x", "y")))
    leaves, treedef = jax.tree_util.tree_flatten(((spec,), {}))
    return treedef, leaves


def _pickled_program(devices, **options) -> bytes:
    offset = 2.0
    fun = lambda x: x + offset  # noqa: E731 - a closure: only cloudpickle carries it
    treedef, leaves = _specs(devices)
    return serialize_program(
        fun, treedef, leaves, None, None, devices[:8], allow_pickle=True, **options
    )


def _with_writer(data: bytes, **parts) -> bytes:
    """`data` with its header's writer parts replaced."""
    msg = payload_pb2.ProgramPayload.FromString(data)
    for name, value in parts.items():
        setattr(msg.header.writer, name, value)
    return msg.SerializeToString(deterministic=True)


def test_a_payload_with_a_pickle_names_this_process_as_its_writer(devices):
    data = _pickled_program(devices)
    assert payload_pb2.ProgramPayload.FromString(data).header.minor_version == 3
    assert payload_writer(data) == this_writer(pickles=True)
    assert payload_writer(data) == Writer(
        "colocated-wire",
        this_writer(pickles=False).version,
        "python",
        PYTHON,
        jax.__version__,
        cloudpickle.__version__,
    )
    assert describe_writer(payload_writer(data)).startswith(
        f"colocated-wire 0.1.0 (python {PYTHON}"
    )


def test_a_payload_without_a_pickle_names_none_unless_asked(devices):
    treedef, leaves = _specs(devices)
    assert payload_writer(serialize_specs(treedef, leaves)) is None
    writer = this_writer(pickles=False)
    data = serialize_specs(treedef, leaves, writer=writer)
    assert payload_writer(data) == writer and writer.cloudpickle is None
    assert deserialize_specs(data)[1] == tuple(leaves)


def test_an_older_target_gets_no_writer(devices):
    data = _pickled_program(devices, target_minor_version=2)
    msg = payload_pb2.ProgramPayload.FromString(data)
    assert msg.header.minor_version == 2 and not msg.header.HasField("writer")
    assert _pickled_program(devices, writer=None) != data  # 1.3, no writer
    assert payload_writer(_pickled_program(devices, writer=None)) is None


def test_a_pickle_of_another_python_is_refused_before_it_is_loaded(devices):
    # Bytes that are no pickle at all: loading them would fail otherwise, so the error proves
    # the writer was compared first.
    msg = payload_pb2.ProgramPayload.FromString(_pickled_program(devices))
    msg.function.pickled.pickle = b"not a pickle"
    data = _with_writer(msg.SerializeToString(), python="3.9")
    with pytest.raises(DecodeError) as info:
        deserialize_program(data, allow_pickle=True)
    assert (info.value.path, info.value.code) == ("header.writer.python", "writer-mismatch")
    assert "Python 3.9" in info.value.detail and PYTHON in info.value.detail
    # A reader that does not unpickle reads the rest.
    assert isinstance(deserialize_program(data).fun, UnloadedFunction)


def test_a_pickle_of_another_cloudpickle_major_is_refused(devices):
    data = _with_writer(_pickled_program(devices), cloudpickle="1.6.0")
    with pytest.raises(DecodeError) as info:
        deserialize_program(data, allow_pickle=True)
    assert (info.value.path, info.value.code) == ("header.writer.cloudpickle", "writer-mismatch")
    assert "1.6.0" in info.value.detail and cloudpickle.__version__ in info.value.detail
    # Another minor version of the same major is read.
    major = cloudpickle.__version__.split(".")[0]
    same_major = _with_writer(_pickled_program(devices), cloudpickle=f"{major}.999.0")
    assert deserialize_program(same_major, allow_pickle=True).fun(3.0) == 5.0


def test_a_writer_of_another_python_without_pickles_is_read(devices):
    treedef, leaves = _specs(devices)
    other = Writer("colocated-wire", "0.1.0", "python", "3.9", "0.4.38")
    data = serialize_specs(treedef, leaves, writer=other)
    assert deserialize_specs(data, allow_pickle=True)[1] == tuple(leaves)


def test_a_pickled_value_leaf_and_tree_pickles_count_as_pickles(devices):
    value = (lambda: 1, {frozenset([1]): None})
    data = serialize_value(value, allow_pickle=True)
    assert payload_writer(data).cloudpickle == cloudpickle.__version__
    msg = payload_pb2.ValuePayload.FromString(data)
    msg.header.writer.python = "3.9"
    with pytest.raises(DecodeError) as info:
        deserialize_value(msg.SerializeToString(), allow_pickle=True)
    assert info.value.code == "writer-mismatch"
    # A pickled dict key alone (in a specs tree).
    spec = jax.ShapeDtypeStruct((2,), np.float32)
    leaves, treedef = jax.tree_util.tree_flatten({frozenset([1]): spec})
    assert payload_writer(serialize_specs(treedef, leaves, allow_pickle=True)) is not None
    assert (
        payload_writer(serialize_specs(treedef, leaves, target_minor_version=2, allow_pickle=True))
        is None
    )


def test_a_decoded_payload_written_again_keeps_its_writer(devices):
    # With a field of a newer version, the decoded objects remember their payload.
    treedef, leaves = _specs(devices)
    other = Writer("colocated-wire", "9.0.0", "typescript")
    msg = payload_pb2.SpecsPayload.FromString(serialize_specs(treedef, leaves, writer=other))
    msg.header.minor_version = 4
    data = msg.SerializeToString(deterministic=True) + bytes([0xA2, 0x01, 0x01, 0x07])  # field 20
    assert serialize_specs(*deserialize_specs(data)) == data
    assert payload_writer(serialize_specs(*deserialize_specs(data))) == other


def test_a_pickle_passed_on_unloaded_keeps_its_own_writer(devices):
    # A process that does not unpickle and writes the program again did not write its pickle.
    other = Writer("colocated-wire", "0.1.0", "python", "3.9", "0.4.38", "2.2.1")
    passed_on = serialize_program(*deserialize_program(_pickled_program(devices, writer=other)))
    assert payload_writer(passed_on) == other
    unnamed = deserialize_program(_pickled_program(devices, writer=None))
    assert payload_writer(serialize_program(*unnamed)) is None
    # A writer of a newer version, with a field this reader lacks, is passed on as it came.
    msg = payload_pb2.ProgramPayload.FromString(_pickled_program(devices, writer=other))
    msg.header.writer.language = 7
    newer = msg.header.writer.SerializeToString() + bytes([0x48, 0x01])  # field 9: 1
    msg.header.writer.ParseFromString(newer)
    data = msg.SerializeToString(deterministic=True)
    again = payload_pb2.ProgramPayload.FromString(serialize_program(*deserialize_program(data)))
    assert again.header.writer.SerializeToString(deterministic=True) == newer
