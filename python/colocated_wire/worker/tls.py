"""The worker's transport security: TLS, mutual TLS, and who may send it pickles.

A pickled function runs whatever code its sender wrote. On a loopback address
only this machine can send one; anywhere else the worker insists on mutual TLS,
so that only a client holding a certificate signed by `--client-ca` gets in.

A relay (worker/relay.py) reaches the other workers of its job as a client of
theirs. Over TLS it needs an identity of its own for that (`--relay-cert`,
`--relay-key`, signed by the CA their `--client-ca` names) and the CA of their
certificates (`--relay-ca`); and since it then speaks for whoever calls it,
it serves only clients of mutual TLS.
"""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds --tls-cert, --tls-key and --client-ca."""
    parser.add_argument("--tls-cert", metavar="PEM", help="serve TLS with this certificate chain")
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument(
        "--client-ca",
        metavar="PEM",
        help="mutual TLS: accept only clients whose certificate this CA signed",
    )
    parser.add_argument(
        "--relay-cert",
        metavar="PEM",
        help="serve Relay over mutual TLS: the certificate this worker presents to the others",
    )
    parser.add_argument("--relay-key", metavar="PEM", help="the private key of --relay-cert")
    parser.add_argument(
        "--relay-ca", metavar="PEM", help="the CA that signed the other workers' certificates"
    )


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files of --tls-cert, --tls-key and --client-ca (None when not given)."""

    cert: str | None
    key: str | None
    client_ca: str | None

    @property
    def mutual(self) -> bool:
        """True when clients must present a certificate the client CA signed."""
        return self.client_ca is not None


def tls_files(args: argparse.Namespace) -> TlsFiles | None:
    """The TLS files the flags name, or None for plaintext; ValueError names a missing flag."""
    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together: give both or neither")
    if args.tls_cert is None:
        if args.client_ca is not None:
            raise ValueError("--client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)")
        return None
    return TlsFiles(args.tls_cert, args.tls_key, args.client_ca)


@dataclass(frozen=True)
class RelayFiles:
    """The PEM files of --relay-cert, --relay-key and --relay-ca: how a relay reaches the
    other workers of its job over TLS."""

    cert: str
    key: str
    ca: str


def relay_files(args: argparse.Namespace, tls: TlsFiles | None) -> RelayFiles | None:
    """The relay's TLS files, or None when not given; ValueError when some are missing, or
    when the worker does not serve mutual TLS (a relay speaks for its callers)."""
    given = (args.relay_cert, args.relay_key, args.relay_ca)
    if all(g is None for g in given):
        return None
    if any(g is None for g in given):
        raise ValueError("--relay-cert, --relay-key and --relay-ca go together: give all three")
    if tls is None or not tls.mutual:
        raise ValueError(
            "--relay-cert needs mutual TLS (--tls-cert, --tls-key and --client-ca): a relay"
            " reaches the other workers as itself, so only clients the client CA signed may"
            " use one"
        )
    return RelayFiles(*given)


def relay_credentials(files: RelayFiles) -> grpc.ChannelCredentials:
    """The credentials a relay dials the other workers with; ValueError names an unreadable file."""
    return grpc.ssl_channel_credentials(
        root_certificates=read_pem(files.ca, "--relay-ca"),
        private_key=read_pem(files.key, "--relay-key"),
        certificate_chain=read_pem(files.cert, "--relay-cert"),
    )


def is_loopback(host: str) -> bool:
    """True for addresses only this machine reaches: 127.0.0.0/8, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # another host name: it may resolve anywhere
        return False


def check_pickle_exposure(host: str, allow_pickle: bool, tls: TlsFiles | None) -> None:
    """Raises ValueError when --allow-pickle would let any peer that reaches `host` run code."""
    if not allow_pickle or is_loopback(host) or (tls is not None and tls.mutual):
        return
    raise ValueError(
        f"--allow-pickle on {host}, which is not a loopback address, needs mutual TLS"
        " (--tls-cert, --tls-key and --client-ca): a pickled function runs any code its"
        " sender wrote, so only clients with a certificate from the client CA may send one"
    )


def server_credentials(tls: TlsFiles | None) -> grpc.ServerCredentials | None:
    """The port's credentials (None for plaintext); ValueError names an unreadable file's flag."""
    if tls is None:
        return None
    return grpc.ssl_server_credentials(
        [(read_pem(tls.key, "--tls-key"), read_pem(tls.cert, "--tls-cert"))],
        root_certificates=read_pem(tls.client_ca, "--client-ca") if tls.mutual else None,
        require_client_auth=tls.mutual,
    )


def add_port(server: grpc.Server, address: str, credentials: grpc.ServerCredentials | None) -> int:
    """Binds `address` with these credentials, or in plaintext when there are none."""
    if credentials is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, credentials)


def read_pem(path: str, flag: str) -> bytes:
    """The file's bytes; ValueError names the flag when it cannot be read."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"{flag} {path}: {e.strerror}") from e
