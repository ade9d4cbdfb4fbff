"""Tests mirror the package tree (tests/python/coll tests purlin/coll, ...).
This directory holds what several of them share (collective_cases), and pytest
puts the directory of a conftest on sys.path, so every test can import it."""

import os
import time

import pytest

DEADLINE = "PURLIN_TEST_DEADLINE"


def pytest_configure(config):
    """$PURLIN_TEST_DEADLINE, seconds since the epoch: the tests not started by
    then are skipped, so that a run on a lent machine with a hard time limit
    (bench/gpu_call.sh tests) ends with its summary, failures named, instead of
    being killed without one."""
    value = os.environ.get(DEADLINE, "")
    try:
        config.purlin_deadline = float(value) if value else None
    except ValueError:
        raise pytest.UsageError(f"${DEADLINE} takes seconds since the epoch (date +%s), got {value!r}") from None


def pytest_runtest_setup(item):
    deadline = item.config.purlin_deadline
    if deadline is not None and time.time() > deadline:
        pytest.skip(f"not started by ${DEADLINE}")
