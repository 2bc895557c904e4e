import pytest

from cuda_scenario import build_double


@pytest.fixture(scope="session")
def double():
    """The CUDA driver test double's library (cuda_scenario.build_double)."""
    return build_double()


def pytest_configure(config):
    # Here rather than in ../conftest.py: only the host suite has Zenoh tests
    # (the lab's guest has neither the zerocam binary nor the client packages).
    config.addinivalue_line(
        "markers",
        "zenoh: needs a wheel built with the cargo feature zenoh (Camera(\"zenoh:KEY\")), "
        "ZEROCAM_ZENOH_BIN (a zerocam binary built with --features zenoh) and the test "
        "extra's eclipse-zenoh and rosbags",
    )
