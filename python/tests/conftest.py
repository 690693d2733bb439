"""Shared fixtures of the Python tests."""
import os

import pytest


@pytest.fixture
def torch():
    """PyTorch (Debian's python3-torch, 1.13) as an oracle. Opt-in: the test runs only with
    TANDEM_TEST_TORCH=1 in the environment and when torch imports, else it is skipped.
    Off by default because `./run test` runs under deps-check, which fails a run that
    opens files of a package a fresh machine lacks (python3-torch is installed only by
    `./run bench` / `./run oracle`). Run the oracles with
    `TANDEM_TEST_TORCH=1 ./run test --fast -R python` on a machine that has torch."""
    if os.environ.get("TANDEM_TEST_TORCH") != "1":
        pytest.skip("PyTorch oracle off (TANDEM_TEST_TORCH=1 turns it on)")
    return pytest.importorskip("torch")
