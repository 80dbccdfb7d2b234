"""TLS and mutual TLS on the worker's port, and the rule that keeps pickles off open ports.

Certificates are made for each run by scripts/test-certs.sh (openssl). The worker
process itself is started in test_worker_tls_process below and in test/worker-tls.test.ts.
"""

import argparse
import contextlib
import subprocess
import sys
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from colocated_wire.worker.health import add_standard_services
from colocated_wire.worker.tls import (
    RelayFiles,
    TlsFiles,
    add_flags,
    add_port,
    check_pickle_exposure,
    is_loopback,
    relay_files,
    server_credentials,
    tls_files,
)

ROOT = Path(__file__).resolve().parents[2]
SERVING = health_pb2.HealthCheckResponse.SERVING


def flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.7", False),
        ("worker.example.com", False),
    ],
)
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-key", "k.pem"], "--tls-cert and --tls-key go together"),
        (["--client-ca", "ca.pem"], "--client-ca needs --tls-cert and --tls-key"),
    ],
)
def test_half_given_tls_flags_are_refused(argv, text):
    with pytest.raises(ValueError, match=text):
        tls_files(flags(*argv))


def test_tls_flags_name_the_files_and_mutual_means_a_client_ca():
    plain = tls_files(flags("--tls-cert", "c.pem", "--tls-key", "k.pem"))
    mutual = tls_files(flags("--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "a.pem"))
    assert tls_files(flags()) is None
    assert plain == TlsFiles("c.pem", "k.pem", None) and not plain.mutual
    assert mutual == TlsFiles("c.pem", "k.pem", "a.pem") and mutual.mutual


@pytest.mark.parametrize("tls", [None, TlsFiles("c.pem", "k.pem", None)])
def test_pickles_on_an_open_address_need_mutual_tls(tls):
    with pytest.raises(ValueError) as e:
        check_pickle_exposure("0.0.0.0", True, tls)
    message = str(e.value)
    assert "--allow-pickle on 0.0.0.0, which is not a loopback address, needs mutual TLS" in message
    assert "--client-ca" in message and "runs any code" in message


@pytest.mark.parametrize(
    ("host", "allow_pickle", "tls"),
    [
        ("127.0.0.1", True, None),
        ("0.0.0.0", False, None),
        ("0.0.0.0", True, TlsFiles("c.pem", "k.pem", "a.pem")),
    ],
)
def test_pickles_are_allowed_on_loopback_or_with_mutual_tls(host, allow_pickle, tls):
    check_pickle_exposure(host, allow_pickle, tls)  # raises nothing


def test_an_unreadable_pem_names_its_flag(tmp_path):
    missing = str(tmp_path / "absent.pem")
    with pytest.raises(ValueError, match=r"--tls-key .*absent\.pem: No such file"):
        server_credentials(TlsFiles(missing, missing, None))


@contextlib.contextmanager
def served(certs: Path, mutual: bool):
    """The port of a server with Health, on TLS (mutual if asked) with the test certificates."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    add_standard_services(server, reflect=False)
    ca = str(certs / "ca.pem") if mutual else None
    tls = TlsFiles(str(certs / "server.pem"), str(certs / "server.key"), ca)
    port = add_port(server, "127.0.0.1:0", server_credentials(tls))
    server.start()
    try:
        yield port
    finally:
        server.stop(grace=None)


def health(port: int, credentials: grpc.ChannelCredentials | None) -> int:
    target = f"localhost:{port}"
    channel = (
        grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)
    )
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return stub.Check(health_pb2.HealthCheckRequest(), timeout=10).status


def client_credentials(ca: Path, client: Path | None = None) -> grpc.ChannelCredentials:
    pair = {}
    if client is not None:
        pair = {
            "private_key": (client / "client.key").read_bytes(),
            "certificate_chain": (client / "client.pem").read_bytes(),
        }
    return grpc.ssl_channel_credentials((ca / "ca.pem").read_bytes(), **pair)


def test_tls_serves_a_client_that_trusts_the_ca(certs):
    with served(certs, mutual=False) as port:
        assert health(port, client_credentials(certs)) == SERVING


def test_mutual_tls_serves_a_client_with_a_certificate_from_the_client_ca(certs):
    with served(certs, mutual=True) as port:
        assert health(port, client_credentials(certs, certs)) == SERVING


@pytest.mark.parametrize("who", ["no certificate", "another CA's certificate", "plaintext"])
def test_mutual_tls_refuses_every_other_client(certs, other_certs, who):
    credentials = {
        "no certificate": client_credentials(certs),
        "another CA's certificate": client_credentials(certs, other_certs),
        "plaintext": None,
    }[who]
    with served(certs, mutual=True) as port, pytest.raises(grpc.RpcError) as e:
        health(port, credentials)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE


def run_worker(*argv: str) -> subprocess.CompletedProcess:
    """Runs the worker process; every case here ends before it starts JAX."""
    command = [sys.executable, "-m", "colocated_wire.worker", "--port", "0", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize("with_tls", [False, True])
def test_the_worker_process_refuses_pickles_on_an_open_address_without_mutual_tls(certs, with_tls):
    tls = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")]
    run = run_worker("--host", "0.0.0.0", "--allow-pickle", *(tls if with_tls else []))
    assert run.returncode == 2
    assert "listening" not in run.stdout
    assert "--allow-pickle on 0.0.0.0, which is not a loopback address, needs mutual TLS" in (
        run.stderr
    )


def test_the_worker_process_refuses_a_client_ca_without_a_certificate(certs):
    run = run_worker("--client-ca", str(certs / "ca.pem"))
    assert run.returncode == 2
    assert "--client-ca needs --tls-cert and --tls-key" in run.stderr


def relay_flags(certs: Path, *omit: str) -> list[str]:
    """--relay-cert, --relay-key and --relay-ca for the test client certificate, less `omit`."""
    files = {
        "--relay-cert": certs / "client.pem",
        "--relay-key": certs / "client.key",
        "--relay-ca": certs / "ca.pem",
    }
    return [a for flag, path in files.items() if flag not in omit for a in (flag, str(path))]


def test_relay_flags_name_the_files_and_need_mutual_tls(certs):
    mutual = ["--tls-cert", "s.pem", "--tls-key", "s.key", "--client-ca", "ca.pem"]
    args = flags(*mutual, *relay_flags(certs))
    assert relay_files(args, tls_files(args)) == RelayFiles(
        str(certs / "client.pem"), str(certs / "client.key"), str(certs / "ca.pem")
    )
    assert relay_files(flags(*mutual), tls_files(flags(*mutual))) is None
    with pytest.raises(ValueError, match="go together: give all three"):
        args = flags(*mutual, *relay_flags(certs, "--relay-ca"))
        relay_files(args, tls_files(args))
    for tls in ([], mutual[:4]):  # plaintext, and TLS that is not mutual
        args = flags(*tls, *relay_flags(certs))
        with pytest.raises(ValueError, match=r"--relay-cert needs mutual TLS \(--tls-cert"):
            relay_files(args, tls_files(args))


def test_the_worker_process_refuses_relay_flags_without_mutual_tls(certs):
    tls = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")]
    run = run_worker(*tls, *relay_flags(certs))
    assert run.returncode == 2
    assert "listening" not in run.stdout
    assert "--relay-cert needs mutual TLS" in run.stderr
