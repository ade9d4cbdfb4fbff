"""The `programmatic` option of a communicator (purlin.runtime.backend.allow_programmatic): what it
asks of the runtime, and its refusals. On a GPU, test_runtime_cuda.py runs the launches themselves."""

from __future__ import annotations

import pytest

from purlin import runtime
from purlin.compile import compile_collective
from purlin.runtime.backend import allow_programmatic


class _Runtime:
    """A stand-in runtime communicator whose kernel fits twice (`fits`) or not."""

    def __init__(self, fits: bool):
        self.fits = fits
        self.asked: list[bool] = []

    def allow_programmatic(self, allow: bool) -> bool:
        self.asked.append(allow)
        return allow and self.fits


@pytest.mark.parametrize("fits", [True, False])
def test_the_default_leaves_the_runtime_s_choice(fits):
    impl = _Runtime(fits)
    allow_programmatic(impl, None, "ar")
    assert impl.asked == []


@pytest.mark.parametrize("fits", [True, False])
def test_false_launches_in_stream_order(fits):
    impl = _Runtime(fits)
    allow_programmatic(impl, False, "ar")
    assert impl.asked == [False]


def test_true_is_taken_where_it_fits():
    impl = _Runtime(True)
    allow_programmatic(impl, True, "ar")
    assert impl.asked == [True]


def test_true_is_refused_where_two_grids_do_not_fit():
    with pytest.raises(ValueError, match="ar: programmatic=True, but its calls cannot launch as programmatic "
                                         "dependents: the kernel is for a GPU before sm_90"):
        allow_programmatic(_Runtime(False), True, "ar")


def test_the_cpu_backend_takes_no_programmatic():
    c = compile_collective("all_reduce", 2, "f32", "sum", 4)
    with pytest.raises(ValueError, match="ar: programmatic is the cuda backend's"):
        runtime.Communicator(c.plan, "cpu", name="ar", programmatic=True)
    assert not runtime.Communicator(c.plan, "cpu", name="ar", programmatic=False).programmatic
