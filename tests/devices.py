"""The devices a test runs on: the CPU everywhere, CUDA (marked `cuda`, skipped without it, see
conftest.py) where a GPU is: `@pytest.mark.parametrize("device", DEVICES)`."""

import pytest

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]
