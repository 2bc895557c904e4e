import gc

import pytest


@pytest.fixture(autouse=True)
def _collect():
    """Collect between tests so numpy arrays of one test never hold maps of the next."""
    yield
    gc.collect()


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "buffer_protocol: needs the cp311-abi3 wheel's buffer protocol (memoryview of a map)",
    )
    config.addinivalue_line(
        "markers",
        "gstreamer: needs a wheel built with the cargo feature gstreamer (Camera(\"gst:...\"))",
    )
    config.addinivalue_line(
        "markers",
        "libcamera: needs an extension built with the cargo feature libcamera "
        "(Camera(\"libcamera:ID\")) and a libcamera camera (the lab's Virtual0)",
    )
