"""The version negotiation rule: min(client max, server max), within both ranges."""

import pytest

from colocated_wire.negotiate import VersionMismatchError, VersionRange, negotiate_version


def test_same_range():
    assert negotiate_version(VersionRange(0, 0), VersionRange(0, 0)) == 0


def test_agrees_at_the_lower_max():
    assert negotiate_version(VersionRange(0, 3), VersionRange(1, 2)) == 2
    assert negotiate_version(VersionRange(1, 2), VersionRange(0, 3)) == 2


def test_client_below_server_min():
    with pytest.raises(VersionMismatchError) as e:
        negotiate_version(VersionRange(0, 1), VersionRange(2, 4))
    assert str(e.value) == "no common colocated.v1 version: client supports 1.0–1.1, server 1.2–1.4"


def test_server_below_client_min():
    with pytest.raises(VersionMismatchError) as e:
        negotiate_version(VersionRange(2, 4), VersionRange(0, 1))
    assert str(e.value) == "no common colocated.v1 version: client supports 1.2–1.4, server 1.0–1.1"


def test_empty_range_is_refused():
    with pytest.raises(ValueError, match="client's version range 1.3–1.1 is empty"):
        negotiate_version(VersionRange(3, 1), VersionRange(0, 5))
