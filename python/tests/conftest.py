import gc

import pytest


@pytest.fixture(autouse=True)
def _collect():
    """Collect between tests so numpy arrays of one test never hold maps of the next."""
    yield
    gc.collect()
