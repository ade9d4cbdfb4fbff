"""tests/python/conftest.py's $PURLIN_TEST_DEADLINE: the tests not started by
then are skipped, and the run still ends with its summary."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def run(tmp_path, deadline: str | None) -> subprocess.CompletedProcess:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_two.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    assert False\n")
    env = {k: v for k, v in os.environ.items() if k != "PURLIN_TEST_DEADLINE"}
    if deadline is not None:
        env["PURLIN_TEST_DEADLINE"] = deadline
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("deadline", [None, "4102444800"])  # none, or 2100-01-01
def test_before_the_deadline_every_test_runs(tmp_path, deadline):
    out = run(tmp_path, deadline)
    assert "1 failed, 1 passed" in out.stdout and "FAILED test_two.py::test_two" in out.stdout


def test_past_the_deadline_tests_are_skipped_with_a_summary(tmp_path):
    out = run(tmp_path, "1")
    assert out.returncode == 0 and "2 skipped" in out.stdout


def test_a_deadline_that_is_not_a_time_is_a_usage_error(tmp_path):
    out = run(tmp_path, "soon")
    assert out.returncode == 4
    assert "$PURLIN_TEST_DEADLINE takes seconds since the epoch (date +%s), got 'soon'" in out.stderr
