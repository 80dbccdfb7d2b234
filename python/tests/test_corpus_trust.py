"""The trust boundary: a pickled function that would run a shell command is not loaded.

test/corpus/trust/pickled-exploit.bin (written by test/corpus-trust.test.ts)
holds a program whose pickle is `os.system("touch /tmp/colocated-wire-pwned")`.
deserialize_program loads a pickle only with allow_pickle=True, so decoding it
runs nothing; test_program.py shows that loading such a pickle would.
"""

import pathlib

import pytest

from colocated_wire import FunctionNotAvailableError, UnloadedFunction, deserialize_program

PAYLOAD = pathlib.Path(__file__).resolve().parents[2] / "test" / "corpus" / "trust"
PWNED = pathlib.Path("/tmp/colocated-wire-pwned")


def test_decoding_runs_nothing(devices):
    PWNED.unlink(missing_ok=True)
    prog = deserialize_program((PAYLOAD / "pickled-exploit.bin").read_bytes())
    assert isinstance(prog.fun, UnloadedFunction)
    assert b"os\nsystem" in prog.fun.pickle
    with pytest.raises(FunctionNotAvailableError, match="allow_pickle"):
        prog.fun()
    assert not PWNED.exists()
