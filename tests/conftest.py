import numpy as np
import pytest


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
