"""`--explain`: a worker that loads another program of a function it holds programs of says
on stderr how the new one differs from the nearest (worker/explain.py)."""

import grpc
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P
from test_worker import SDS, float_spec, program, served
from test_worker_drain import Worker
from test_worker_programs import load, service

from colocated_wire import examples
from colocated_wire._gen.colocated.v1 import payload_pb2, service_pb2_grpc
from colocated_wire.diff.nearest import ENV
from colocated_wire.worker import explain as worker_explain
from colocated_wire.worker.main import parse_args
from colocated_wire.worker.programs import ProgramCache

LOADED = "colocated_wire.worker: loaded another program of"


@pytest.fixture
def mesh(mesh_2x4):
    return mesh_2x4


def explaining(capacity=8):
    worker = service(capacity)
    worker.state.programs = ProgramCache(worker.state.policy, capacity, explain=True)
    return worker


def said(text: str) -> list[str]:
    """The explanations in `text`, each with the lines that continue it."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(LOADED):
            out.append(line)
        elif line.startswith("  ") and out:
            out[-1] += "\n" + line
    return out


def test_a_worker_process_says_why_it_loaded_a_function_again(tmp_path, mesh):
    spec = float_spec(mesh)
    first = program(examples.affine, mesh, spec, spec, spec)
    resharded = program(examples.affine, mesh, spec, float_spec(mesh, P("x")), spec)
    other = program(examples.summarize, mesh, spec, spec)
    retyped = program(
        examples.affine, mesh, spec, spec, SDS((8, 4), np.int32, sharding=spec.sharding)
    )
    worker = Worker(tmp_path / "gate", "--explain", "--allow-module", "colocated_wire.examples")
    try:
        with grpc.insecure_channel(worker.target) as channel:
            stub = service_pb2_grpc.ColocatedWorkerServiceStub(channel)
            digests = [load(stub, p) for p in (first, first, other, resharded, retyped)]
        worker.wait_for("dtype float32 to int32")
    finally:
        worker.process.kill()
        worker.process.wait()
    a, b = (d.hex()[:12] for d in digests[::3])
    retyped_digest = digests[4].hex()[:12]
    assert said(worker.stderr()) == [
        f"{LOADED} colocated_wire.examples.affine: cached program {a}… and new program {b}…"
        " differ: 1 leaf in 1 group\n"
        "  1 leaf at input[0][1]: sharding #2 to #4, PartitionSpec('x', 'y') to ('x',)",
        f"{LOADED} colocated_wire.examples.affine: cached program {a}… and new program"
        f" {retyped_digest}… differ: 1 leaf in 1 group\n"
        "  1 leaf at input[0][2]: dtype float32 to int32",
    ]


def test_a_worker_without_explain_says_nothing(mesh, capsys):
    spec = float_spec(mesh)
    with served(service()) as stub:
        for p in (spec, float_spec(mesh, P("x"))):
            load(stub, program(examples.affine, mesh, p, spec, spec))
    assert LOADED not in capsys.readouterr().err


def test_the_same_specs_in_other_bytes_say_so(mesh, capsys):
    spec = float_spec(mesh)
    with served(explaining()) as stub:
        for version in (0, 1):  # one program, written at two minor versions
            load(stub, program(examples.affine, mesh, spec, spec, spec, version=version), 1)
    (text,) = said(capsys.readouterr().err)
    first, second = text.split("\n")
    assert first.startswith(f"{LOADED} colocated_wire.examples.affine: new program ")
    assert " has the same specs and devices as cached program " in first
    assert second == (
        "  their functions differ (a pickle, or what it captures), or only their bytes"
        " (a schema version, a table's order)"
    )


def test_only_the_latest_programs_of_the_function_are_compared(mesh, capsys, monkeypatch):
    compared = []
    explanation = worker_explain.explanation

    def counting(new, cached, allow_pickle):
        compared.append(len(cached))
        return explanation(new, cached, allow_pickle)

    monkeypatch.setattr(worker_explain, "explanation", counting)
    spec = float_spec(mesh)
    with served(explaining(capacity=16)) as stub:
        load(stub, program(examples.summarize, mesh, spec, spec))
        for rows in range(1, 8):
            shaped = SDS((rows * 8, 4), np.float32, sharding=spec.sharding)
            load(stub, program(examples.affine, mesh, shaped, spec, spec))
    assert compared == [1, 2, 3, 4, 4, 4]  # never summarize's, never more than KEPT
    last = said(capsys.readouterr().err)[-1]
    assert last.endswith("1 leaf at input[0][0]: shape (48, 4) to (56, 4)")


def test_a_fault_in_explaining_is_said_and_the_program_loads(mesh, capsys, monkeypatch):
    def broken(new, earlier):
        raise RuntimeError("no diff today")

    monkeypatch.setattr(worker_explain, "nearest", broken)
    spec = float_spec(mesh)
    with served(explaining()) as stub:
        for p in (spec, float_spec(mesh, P("x"))):
            assert len(load(stub, program(examples.affine, mesh, p, spec, spec))) == 32
    assert (
        "colocated_wire.worker: could not explain the program of colocated_wire.examples.affine:"
        " RuntimeError('no diff today')"
    ) in capsys.readouterr().err


def test_the_flag_and_its_default_from_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert (parse_args([]).explain, parse_args(["--explain"]).explain) == (False, True)
    monkeypatch.setenv(ENV, "1")
    assert (parse_args([]).explain, parse_args(["--no-explain"]).explain) == (True, False)


def test_a_client_that_now_runs_another_python_shows_as_a_writer_change(mesh, capsys):
    spec = float_spec(mesh)
    with served(explaining()) as stub:
        for python in ("3.11", "3.12"):  # one program, from clients of two Pythons
            prog = program(examples.affine, mesh, spec, spec, spec, version=3)
            prog.header.writer.CopyFrom(
                payload_pb2.Writer(
                    library="colocated-wire", version="0.1.0", language=2, python=python
                )
            )
            load(stub, prog, 3)
    (text,) = said(capsys.readouterr().err)
    assert text.endswith(
        "\n  writer colocated-wire 0.1.0 (python 3.11) to colocated-wire 0.1.0 (python 3.12)"
    )
