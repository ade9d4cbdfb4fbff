"""Fixtures of the runtime tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def group_of_one(tmp_path):
    """A gloo process group of this process alone, for the checks a ProcessCommunicator makes before any call."""
    dist = pytest.importorskip("torch.distributed")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()
