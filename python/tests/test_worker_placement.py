"""worker_placement: an input put directly is the array jax.device_put would have made."""

import jax
import ml_dtypes
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

from colocated_wire.worker import placement as worker_placement
from colocated_wire.worker.arrays import direct_puts, place_inputs
from colocated_wire.worker.placement import direct_put, place, placed_directly

HOSTS = [
    np.arange(32, dtype=np.float32).reshape(8, 4),
    np.array(2.5, dtype=np.float32),
    np.arange(6, dtype=np.int8).reshape(2, 3),
    np.array([True, False, True]),
    np.arange(4, dtype=np.uint32),
    np.zeros((0, 3), np.float16),
    np.arange(5, dtype=np.float32).astype(ml_dtypes.bfloat16),
    np.array([1 + 2j, 3 - 4j], np.complex64),
    np.arange(128 * 256, dtype=np.float32).reshape(128, 256),  # past COPIED_BYTES
]
# The ways of placing directly: by DLPack where it can, and by batched_device_put alone.
WAYS = ["both", "batched only"]


def describe(x: jax.Array) -> tuple:
    return (x.aval, x.sharding, x._committed, x.weak_type, type(x))


def test_the_private_entry_points_are_found():
    # The fast paths must be live on the JAX this package pins, or the bench measures the fallback.
    assert worker_placement._DIRECT is not None
    assert worker_placement._DLPACK is not None


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("host", HOSTS, ids=lambda h: f"{h.dtype}{list(h.shape)}")
def test_a_direct_put_matches_jax_device_put(devices, host, way, monkeypatch):
    if way == "batched only":
        monkeypatch.setattr(worker_placement, "_DLPACK", None)
    sharding = SingleDeviceSharding(devices[3])
    direct = placed_directly(host, sharding)
    assert direct is not None
    expected = jax.device_put(host, sharding)
    assert describe(direct) == describe(expected)
    np.testing.assert_array_equal(np.asarray(direct), host)
    # It behaves as an array in JAX's ops, on its device.
    assert (direct + direct).devices() == {devices[3]}
    np.testing.assert_array_equal(np.asarray(direct + direct), np.asarray(expected + expected))


def test_small_inputs_of_dlpack_dtypes_never_reach_batched_device_put(devices, monkeypatch):
    def refuse(*_):
        raise AssertionError("batched_device_put")

    monkeypatch.setattr(worker_placement, "_DIRECT", (refuse, worker_placement._DIRECT[1]))
    sharding = SingleDeviceSharding(devices[1])
    small = [h for h in HOSTS if h.nbytes <= worker_placement.COPIED_BYTES]
    for host in small:
        if host.dtype.kind in "biufc":
            np.testing.assert_array_equal(np.asarray(placed_directly(host, sharding)), host)
        else:  # bfloat16: DLPack does not carry it
            with pytest.raises(AssertionError, match="batched_device_put"):
                placed_directly(host, sharding)
    with pytest.raises(AssertionError, match="batched_device_put"):
        placed_directly(HOSTS[-1], sharding)  # past COPIED_BYTES


def test_a_placed_copy_is_the_arrays_own_so_a_donating_function_cannot_touch_the_request(devices):
    request = bytearray(np.arange(32, dtype=np.float32).tobytes())
    host = np.frombuffer(bytes(request), np.float32).reshape(8, 4)  # read-only, as a request's
    placed = placed_directly(host, SingleDeviceSharding(devices[0]))
    out = jax.jit(lambda x: x * 0 - 1, donate_argnums=0)(placed)
    assert placed.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), -np.ones((8, 4), np.float32))
    np.testing.assert_array_equal(host, np.arange(32, dtype=np.float32).reshape(8, 4))


def test_what_jax_would_change_or_spread_takes_jax_device_put(devices, mesh_2x4):
    one = SingleDeviceSharding(devices[0])
    assert placed_directly(np.zeros(3, np.float64), one) is None  # x64 off: JAX makes it float32
    assert placed_directly([1.0, 2.0], one) is None  # not a NumPy array
    assert placed_directly(np.zeros(3, jax.dtypes.float0), one) is None  # JAX keeps it on the host
    named = NamedSharding(mesh_2x4, PartitionSpec("x"))
    assert placed_directly(np.zeros((2, 4), np.float32), named) is None


def test_place_mixes_both_ways_and_keeps_the_order(devices, mesh_2x4):
    named = NamedSharding(mesh_2x4, PartitionSpec("x"))
    hosts = [HOSTS[0], np.zeros(3, np.float64), HOSTS[0], HOSTS[2]]
    shardings = [SingleDeviceSharding(devices[1]), SingleDeviceSharding(devices[2]), named, named]
    placed = place(hosts, shardings)
    expected = jax.device_put(hosts, shardings)
    assert [describe(x) for x in placed] == [describe(x) for x in expected]
    for got, want in zip(placed, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_put_decided_at_load_is_the_array_jax_device_put_makes(devices):
    sharding = SingleDeviceSharding(devices[2])
    for host in HOSTS:
        put = direct_put(host.dtype, host.shape, sharding)
        copied = host.nbytes <= worker_placement.COPIED_BYTES and host.dtype.kind in "biufc"
        assert (put is not None) == copied, host.dtype
        if put is None:
            continue
        placed = put(memoryview(host.tobytes()))  # read-only bytes, as a request's
        assert describe(placed) == describe(jax.device_put(host, sharding))
        np.testing.assert_array_equal(np.asarray(placed), host)


def test_no_put_is_decided_for_what_jax_would_change_or_spread(devices, mesh_2x4):
    one = SingleDeviceSharding(devices[0])
    assert direct_put(np.dtype(np.float64), (3,), one) is None  # x64 off: JAX makes it float32
    assert direct_put(jax.dtypes.float0, (3,), one) is None  # JAX keeps it on the host
    assert direct_put(jax.random.key(0).dtype, (), one) is None  # a PRNG key: its key data
    assert (
        direct_put(np.dtype(np.float32), (2, 4), NamedSharding(mesh_2x4, PartitionSpec())) is None
    )


def test_inputs_put_as_decided_at_load_match_the_general_path(devices, mesh_2x4):
    one = SingleDeviceSharding(devices[1])
    specs = [jax.ShapeDtypeStruct(h.shape, h.dtype, sharding=one) for h in HOSTS[:4]]
    data = [memoryview(h.tobytes()) for h in HOSTS[:4]]
    direct = direct_puts(specs, devices)
    assert direct is not None and len(direct) == 4
    placed = place_inputs(specs, data, devices, direct)
    expected = place_inputs(specs, data, devices)
    assert [describe(x) for x in placed] == [describe(x) for x in expected]
    for got, want in zip(placed, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # One input that cannot go directly: the program's inputs take the general path.
    spread = jax.ShapeDtypeStruct(
        (2, 4), np.float32, sharding=NamedSharding(mesh_2x4, PartitionSpec())
    )
    assert direct_puts([*specs, spread], devices) is None
