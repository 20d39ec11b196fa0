import os
import shutil
import tempfile

import numpy as np
import pytest


def pytest_configure(config):
    """JAX's compilation cache in a directory made for this run (by the controlling process,
    before it starts the xdist workers, so they and every process a test starts share it): a
    worker process or another test that compiles the same log-density reads the executable
    instead of compiling it again.  Every run starts with an empty cache."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller's directory is in the environment
    config._jax_cache = tempfile.mkdtemp(prefix="thrifty-tests-jax-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = config._jax_cache
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"


def pytest_unconfigure(config):
    if getattr(config, "_jax_cache", None):
        shutil.rmtree(config._jax_cache, ignore_errors=True)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True, scope="session")
def _checkpoint_key_in_a_temporary_config_home(tmp_path_factory):
    """Checkpoints are authenticated with a key in the user's configuration directory: the
    tests (and the processes they start) use a temporary one, never the real home."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
        yield
