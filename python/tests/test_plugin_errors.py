"""The plugin's error for a device id this process lacks is caught as JAX's own error for it,
on every supported JAX: a KeyError on 0.4.38 (its dict of devices), a ValueError from 0.5."""

import jax
import numpy as np
import pytest
from jax.experimental.colocated_python import serialization
from jax_limits import CPU_DEVICE_ERRORS

from colocated_wire import LiftError, plugin, serialize_value
from colocated_wire._gen.colocated.v1 import payload_pb2
from colocated_wire.plugin import PluginLiftError


def _jax_error_for_a_missing_device(device_id: int) -> BaseException:
    """What JAX's own colocated serialization raises reading `device_id` on this process."""
    with pytest.raises(Exception) as caught:
        if CPU_DEVICE_ERRORS is None:  # JAX 0.5 on: its lookup names the id
            serialization._lookup_cpu_device({}, device_id)
        else:  # 0.4.38: a dict of this process's CPU devices, indexed by the id
            serialization._get_cpu_device_map()[device_id]
    return caught.value


def test_the_error_is_every_type_code_for_jax_catches():
    e = PluginLiftError("value.leaves[0]: device 4096 is not a CPU device of this process")
    assert isinstance(e, LiftError) and isinstance(e, KeyError) and isinstance(e, ValueError)
    # A KeyError's str() is its key's repr; this one is the message as it is.
    assert str(e) == "value.leaves[0]: device 4096 is not a CPU device of this process"
    assert repr(e) == f"PluginLiftError({str(e)!r})"
    for catch in (ValueError, KeyError, LookupError, LiftError):
        with pytest.raises(catch):
            raise e


def test_a_missing_device_is_caught_as_jax_raises_it(devices):
    missing = len(devices) + 4000
    jax_error = _jax_error_for_a_missing_device(missing)
    assert type(jax_error) is (ValueError if CPU_DEVICE_ERRORS is None else KeyError)

    mesh = jax.sharding.Mesh(np.array(devices[:1]), ("x",))
    msg = payload_pb2.ValuePayload.FromString(serialize_value(mesh))
    ids = next(e.device_list for e in msg.table.entries if e.HasField("device_list"))
    ids.ClearField("ids")
    ids.plain.ids.append(missing)
    with plugin.installed(), pytest.raises(type(jax_error)) as caught:
        serialization._deserialize(msg.SerializeToString())
    assert isinstance(caught.value, PluginLiftError)
    assert str(missing) in str(caught.value) and not str(caught.value).startswith(("'", '"'))
