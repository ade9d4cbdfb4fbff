"""Each fact once: the plan format's enums and constants are defined in C++
(csrc/include/purlin/plan.h) for the runtimes and in Python (purlin.plan) for
the compiler; these tests read the header and hold the two equal. The enums
the plan shares with the kernels (DType, RedOp, Mech) are in abi.h and
tests/python/cuda/test_cuda_abi.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from purlin import plan as P
from purlin.coll.layouts import MAX_WORLD
from purlin.snac.vocabulary import MAX_BUFFER_BYTES, MAX_ROLE_BLOCKS, MAX_SLOTS

CSRC = Path(__file__).resolve().parents[3] / "csrc"
PLAN_H = CSRC / "include" / "purlin" / "plan.h"
HEADER = PLAN_H.read_text()

ENUMS = {"Op": P.Op, "Space": P.Space, "Base": P.Base, "Order": P.Order, "BufKind": P.BufKind,
         "RoleKind": P.RoleKind, "Scope": P.Scope}


def cpp_enum(name: str) -> dict[str, int]:
    body = re.search(rf"enum class {name} : int64_t {{([^}}]*)}}", HEADER).group(1)
    return {k.strip(): int(v) for k, v in (item.split("=") for item in body.split(","))}


def cpp_array(name: str) -> list[str]:
    return [v.strip() for v in re.search(rf"{name}\[\] = {{([^}}]*)}};", HEADER).group(1).split(",")]


def camel(name: str) -> str:
    return "".join(w.capitalize() for w in name.split("_"))


def test_every_plan_enum_is_checked():
    assert set(re.findall(r"enum class (\w+) : int64_t", HEADER)) == set(ENUMS)


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enums_agree(name):
    assert cpp_enum(name) == {camel(m.name): m.value for m in ENUMS[name]}


def test_format_constants_agree():
    found = {m.group(1): int(m.group(2), 0)
             for m in re.finditer(r"constexpr (?:int|int64_t) (k\w+) = (0x[0-9A-Fa-f]+|\d+);", HEADER)}
    assert found == {"kMagic": P.MAGIC, "kVersion": P.VERSION, "kHeaderWords": P.HEADER_WORDS,
                     "kInstrWords": P.INSTR_WORDS, "kRefWords": P.REF_WORDS, "kFlagSymmetric": P.FLAG_SYMMETRIC,
                     "kMaxSlots": MAX_SLOTS, "kMaxRoleBlocks": MAX_ROLE_BLOCKS, "kMaxWorld": MAX_WORLD}
    shifted = re.search(r"constexpr int64_t kMaxBufferBytes = int64_t\(1\) << (\d+);", HEADER)
    assert shifted and 1 << int(shifted.group(1)) == MAX_BUFFER_BYTES


def test_role_names_agree():
    names = [n.strip('"') for n in cpp_array("kRoleKindNames")]
    assert names == [k.name.lower() for k in sorted(P.RoleKind, key=int)]
    assert [int(k) for k in sorted(P.RoleKind, key=int)] == list(range(len(names)))


def test_role_names_are_spelled_once():
    # A second table of names is how the CPU backend once called `local` "role".
    for path in sorted(CSRC.rglob("*")):
        if path.suffix in (".h", ".cpp") and path != PLAN_H:
            assert '"producer"' not in path.read_text(), f"{path} spells the role names again"


def test_archs_agree():
    assert [int(a) for a in cpp_array("kArchs")] == sorted(P.ARCHS.values())
