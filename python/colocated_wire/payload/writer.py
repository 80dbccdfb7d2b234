"""Who wrote a payload (colocated.v1.3), named in its header.

A pickle is Python's own: one written under another Python minor version or
another cloudpickle major version can fail deep inside `pickle.loads`, far
from the cause, or load into something else. So a Python writer names its
interpreter, JAX and, when the payload holds a pickle, cloudpickle; a reader
that would unpickle compares them with its own first and refuses a mismatch
with a DecodeError naming both (`writer-mismatch`), before unpickling anything.
A TypeScript writer names its library, version and language only; it writes
no pickles. src/payload/writer.ts is the same in TypeScript.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Literal

import cloudpickle
import jax
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.message import Message

from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire._version import __version__
from colocated_wire.entries.tree_nodes import is_pickled_node_data
from colocated_wire.errors import DecodeError
from colocated_wire.schema_version import field_since, require_version

# The minor version that introduced the header's writer.
WRITER_SINCE = field_since(payload_pb2.Header.DESCRIPTOR, "writer")

# Languages by number, named from the schema's enum: WRITER_LANGUAGE_PYTHON is "python".
_LANGUAGES = {
    v.number: v.name.removeprefix("WRITER_LANGUAGE_").lower()
    for v in payload_pb2.WriterLanguage.DESCRIPTOR.values
    if v.number
}
_LANGUAGE_VALUES = {name: number for number, name in _LANGUAGES.items()}

# An encoder's default writer: this process's, when the payload holds a pickle.
AUTO: Literal["auto"] = "auto"


@dataclasses.dataclass(frozen=True)
class Writer:
    """The writer a payload's header names; the parts it does not say are None."""

    library: str
    version: str
    language: str | None = None  # "python", "typescript"
    python: str | None = None  # the interpreter's minor version, "3.12"
    jax: str | None = None
    cloudpickle: str | None = None


def this_writer(pickles: bool) -> Writer:
    """This library as a payload's writer; cloudpickle's version when the payload holds pickles."""
    return Writer(
        library="colocated-wire",
        version=__version__,
        language="python",
        python=_python_minor(),
        jax=jax.__version__,
        cloudpickle=cloudpickle.__version__ if pickles else None,
    )


def lower(writer: Writer) -> payload_pb2.Writer:
    """The header's Writer message for a writer."""
    return payload_pb2.Writer(
        library=writer.library,
        version=writer.version,
        language=_LANGUAGE_VALUES.get(writer.language or "", 0),
        python=writer.python or "",
        jax=writer.jax or "",
        cloudpickle=writer.cloudpickle or "",
    )


def lift(msg: payload_pb2.Writer) -> Writer:
    """A header's writer: what it does not say (or says in a newer version's terms) is None."""
    return Writer(
        library=msg.library,
        version=msg.version,
        language=_LANGUAGES.get(msg.language),
        python=msg.python or None,
        jax=msg.jax or None,
        cloudpickle=msg.cloudpickle or None,
    )


def check(header: payload_pb2.Header) -> None:
    """A writer is written only under a header of 1.3 or later."""
    if header.HasField("writer"):
        require_version("header.writer", "a writer", WRITER_SINCE, header.minor_version)


def payload_writer(data: bytes) -> Writer | None:
    """The writer a payload's header names, if any (the header alone is read)."""
    envelope = payload_pb2.PayloadEnvelope()
    try:
        envelope.ParseFromString(bytes(data))
    except (ProtobufDecodeError, ValueError, RuntimeError) as e:
        raise DecodeError("payload", "malformed", f"not a valid PayloadEnvelope ({e})") from e
    header = envelope.header
    return lift(header.writer) if header.HasField("writer") else None


def describe_writer(writer: Writer) -> str:
    """A writer in one line: "colocated-wire 0.1.0 (python 3.12, jax 0.10.2, cloudpickle 3.1.1)"."""
    if writer.language == "python":
        runtime = [f"python {writer.python or '?'}"]
    else:
        runtime = [writer.language or "language unknown"]
    if writer.jax:
        runtime.append(f"jax {writer.jax}")
    if writer.cloudpickle:
        runtime.append(f"cloudpickle {writer.cloudpickle}")
    return f"{writer.library} {writer.version} ({', '.join(runtime)})"


def header_writer(
    writer: Writer | payload_pb2.Writer | Literal["auto"] | None, payload: Message, minor: int
) -> payload_pb2.Writer | None:
    """The Writer message a payload's header gets, or None: none for a target before 1.3; for
    AUTO, this process's writer exactly when the payload holds a pickle; a Writer message (one
    read from a payload) as it is."""
    if writer is None or minor < WRITER_SINCE:
        return None
    if isinstance(writer, payload_pb2.Writer):
        return writer
    if writer == AUTO:
        return lower(this_writer(pickles=True)) if holds_pickle(payload) else None
    return lower(writer)


def check_pickles(payload: Message) -> None:
    """Refuses a payload holding pickles that its writer wrote under another Python minor
    version or cloudpickle major version than this process runs, naming both."""
    header = payload.header
    if not header.HasField("writer") or not holds_pickle(payload):
        return
    theirs = header.writer
    ours = _python_minor()
    if theirs.python and theirs.python != ours:
        detail = f"its pickles were written under Python {theirs.python}; this reader runs {ours}"
        raise DecodeError("header.writer.python", "writer-mismatch", detail)
    if theirs.cloudpickle and _major(theirs.cloudpickle) != _major(cloudpickle.__version__):
        detail = (
            f"its pickles were written by cloudpickle {theirs.cloudpickle};"
            f" this reader has {cloudpickle.__version__}"
        )
        raise DecodeError("header.writer.cloudpickle", "writer-mismatch", detail)


def holds_pickle(payload: Message) -> bool:
    """Whether a payload holds a pickle: a function or value leaf, a dict key, a node type or a
    custom node's data."""
    if isinstance(payload, payload_pb2.ProgramPayload):
        if payload.function.WhichOneof("function") == "pickled":
            return True
        trees = [payload.input_specs.treedef, payload.output_specs.treedef]
    elif isinstance(payload, payload_pb2.ValuePayload):
        if any(leaf.WhichOneof("leaf") == "pickled" for leaf in payload.value.leaves):
            return True
        trees = [payload.value.treedef]
    else:
        trees = [payload.specs.treedef]
    return any(_tree_holds_pickle(t) for t in trees)


def _tree_holds_pickle(treedef) -> bool:
    return (
        any(t.pickle for t in treedef.node_types)
        or any(k.WhichOneof("key") == "pickle" for k in treedef.keys)
        or any(is_pickled_node_data(d) for d in treedef.node_data)
    )


def _python_minor() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _major(version: str) -> str:
    return version.split(".", 1)[0]
