import pytest
import torch


@pytest.fixture(autouse=True)
def _deterministic_threads():
    # Tests compare numbers, not speed: keep torch's global state identical across tests.
    torch.manual_seed(0)
    yield
