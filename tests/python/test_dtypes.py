"""purlin.dtypes is the one table of element types and reductions: its IR
spellings are xDSL's, the coll attributes are its, and importing it (or the
runtime and purlin.torch's call path) loads neither xDSL nor ml_dtypes."""

import subprocess
import sys

import pytest

from purlin import dtypes
from purlin.coll import attributes


@pytest.mark.parametrize("d", dtypes.DTYPES, ids=lambda d: d.name)
def test_each_dtype_spells_its_xdsl_element_type(d):
    assert str(d.element()) == d.ir
    assert dtypes.dtype_name(d.element()) == d.name
    assert dtypes.element_bytes(d.element()) == d.bytes == dtypes.numpy_dtype(d.name).itemsize


def test_the_coll_attributes_are_the_one_table():
    assert attributes.DTYPES is dtypes.DTYPES
    assert attributes.ReduceKind is dtypes.ReduceKind


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()


@pytest.mark.parametrize("statement", ["import purlin.dtypes", "import purlin.runtime", "import purlin.plan"])
def test_the_call_path_imports_no_compiler(statement):
    assert not {"xdsl", "ml_dtypes", "purlin.compile", "purlin.coll.dialect"} & set(_loaded_after(statement))


def test_purlin_torch_imports_no_compiler():
    pytest.importorskip("torch")
    loaded = set(_loaded_after("import torch, purlin.torch"))
    assert not {"xdsl", "purlin.compile", "purlin.coll.dialect", "purlin.snac.dialect"} & loaded
