"""A function by name imports nothing that the worker did not allow.

Importing a module runs its top-level code, so a payload that names a module
must not make an unsuspecting process import it.
"""

import sys

import pytest
from vector_cases import program_by_name

from colocated_wire import LiftError, deserialize_program, serialize_program
from colocated_wire._gen.colocated.v1 import payload_pb2


@pytest.fixture
def planted_module(tmp_path, monkeypatch):
    """A module on the path whose import leaves a mark."""
    mark = tmp_path / "imported"
    (tmp_path / "planted_mod.py").write_text(
        f"open({str(mark)!r}, 'w').close()\ndef run(x):\n    return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield mark
    sys.modules.pop("planted_mod", None)


def _program_naming(module: str, qualname: str, devices) -> bytes:
    msg = payload_pb2.ProgramPayload.FromString(serialize_program(*program_by_name(devices)))
    msg.function.by_name.module, msg.function.by_name.qualname = module, qualname
    return msg.SerializeToString(deterministic=True)


def test_a_module_not_imported_is_not_imported_by_default(planted_module, devices):
    data = _program_naming("planted_mod", "run", devices)
    with pytest.raises(LiftError, match="not imported, and importing runs code"):
        deserialize_program(data)
    assert not planted_module.exists()


def test_allowed_modules_may_be_imported(planted_module, devices):
    data = _program_naming("planted_mod", "run", devices)
    prog = deserialize_program(data, allowed_modules={"planted_mod"})
    assert planted_module.exists() and prog.fun(3) == 3


def test_a_module_already_imported_resolves_by_default(devices):
    prog = deserialize_program(_program_naming("vector_cases", "double", devices))
    assert prog.fun.__name__ == "double"
