"""purlin.jax on 8 CPU devices of this process (XLA's host platform split in
8), set before any JAX backend starts; a test that finds fewer fails."""

import jax
import pytest

DEVICES = 8

try:
    jax.config.update("jax_num_cpu_devices", DEVICES)
except RuntimeError:  # a backend started already: the fixture below says whether it has enough devices
    pass


@pytest.fixture
def devices():
    found = jax.devices("cpu")
    if len(found) < DEVICES:
        pytest.fail(f"purlin.jax's tests need {DEVICES} CPU devices, JAX started with {len(found)} (something "
                    "used JAX before tests/python/jax/conftest.py set jax_num_cpu_devices)")
    return found[:DEVICES]
