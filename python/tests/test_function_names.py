"""A function by name resolves only through an explicit allow-list (deny by default).

A payload may name any callable the process can reach (`posix.system`,
`builtins.exec`, `subprocess.run`), and importing a module runs its
top-level code, so without an allow-list no name resolves and nothing is
imported.
"""

import subprocess  # noqa: F401 - imported, so that only the allow-list stands between
import sys

import pytest
from vector_cases import program_by_name

from colocated_wire import LiftError, deserialize_program, serialize_program
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.errors import FunctionNotAllowedError


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


def test_a_module_not_allowed_is_not_imported_by_default(planted_module, devices):
    data = _program_naming("planted_mod", "run", devices)
    with pytest.raises(FunctionNotAllowedError, match="needs an allow-list; pass allowed_modules="):
        deserialize_program(data)
    assert not planted_module.exists()


def test_allowed_modules_may_be_imported(planted_module, devices):
    data = _program_naming("planted_mod", "run", devices)
    prog = deserialize_program(data, allowed_modules={"planted_mod"})
    assert planted_module.exists() and prog.fun(3) == 3


def test_an_allowed_function_resolves_and_its_neighbours_do_not(planted_module, devices):
    data = _program_naming("planted_mod", "run", devices)
    assert deserialize_program(data, allowed_functions={"planted_mod.run"}).fun(4) == 4
    other = _program_naming("vector_cases", "double", devices)
    with pytest.raises(FunctionNotAllowedError, match="allowed_functions"):
        deserialize_program(other, allowed_functions={"planted_mod.run", "vector_cases.triple"})


@pytest.mark.parametrize(
    ("module", "qualname"), [("posix", "system"), ("builtins", "exec"), ("subprocess", "run")]
)
def test_dangerous_names_already_imported_are_refused_without_an_allow_list(
    module, qualname, devices
):
    assert module in sys.modules  # imported: before deny-by-default, each of these resolved
    data = _program_naming(module, qualname, devices)
    with pytest.raises(FunctionNotAllowedError, match=f"function {module}.{qualname}: "):
        deserialize_program(data)
    with pytest.raises(FunctionNotAllowedError, match="is not allowed"):
        deserialize_program(data, allowed_modules={"vector_cases"}, allow_pickle=True)


def test_a_module_already_imported_resolves_only_when_allowed(devices):
    data = _program_naming("vector_cases", "double", devices)
    with pytest.raises(LiftError, match="needs an allow-list"):
        deserialize_program(data)
    prog = deserialize_program(data, allowed_modules={"vector_cases"})
    assert prog.fun.__name__ == "double"
