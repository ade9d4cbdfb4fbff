"""Each fact once: the kernel ABI (include/purlin/abi.h) and the plan format's
enums are defined in C++ for the device and in Python for the compiler;
these tests read the header and hold the two equal."""

from __future__ import annotations

import re
from pathlib import Path

from purlin import plan as P
from purlin.cuda import abi

HEADER = abi.ABI_HEADER.read_text()


def cpp_constants() -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr int (k\w+) = (\d+);", HEADER)}


def cpp_enum(name: str) -> dict[str, int]:
    body = re.search(rf"enum class {name} : i64 {{([^}}]*)}}", HEADER).group(1)
    return {k.strip(): int(v) for k, v in (item.split("=") for item in body.split(","))}


def test_table_layout_constants_agree():
    found = cpp_constants()
    for name, value in abi.CONSTANTS.items():
        assert found.get(name) == value, f"abi.h {name} = {found.get(name)}, purlin/cuda/abi.py says {value}"
    layout = {k for k in found if k not in ("kPacketBytes", "kPacketDataBytes", "kDTypeCount")}
    assert layout == set(abi.CONSTANTS), "abi.h and abi.py list different table constants"


def test_header_fields_agree():
    body = re.search(r"struct Header \{(.*?)\};", HEADER, re.S).group(1)
    fields = re.findall(r"(\w+);", re.sub(r"//[^\n]*", "", body))
    assert tuple(fields) == abi.HEADER_FIELDS


def test_plan_enums_agree_with_the_kernel_abi():
    assert cpp_enum("DType") == {"BF16": 0, "F16": 1, "F32": 2, "FP8E4M3": 3, "FP8E5M2": 4, "I8": 5,
                                 "UI8": 6, "I32": 7, "UI32": 8, "I64": 9, "UI64": 10, "F64": 11}
    assert {d.upper(): code for d, (code, _) in P.DTYPES.items()} == cpp_enum("DType")
    assert {op.name.capitalize(): op.value for op in P.RedOp} == cpp_enum("RedOp")
    mechs = {"".join(w.capitalize() for w in m.name.split("_")): m.value for m in P.Mech}
    assert mechs == cpp_enum("Mech")


def test_packet_geometry_agrees_with_the_protocol():
    from purlin.snac.protocol import PACKET_BYTES, PACKET_DATA_BYTES

    found = re.findall(r"constexpr int (kPacket\w*) = (\d+);", HEADER)
    assert dict(found) == {"kPacketBytes": str(PACKET_BYTES), "kPacketDataBytes": str(PACKET_DATA_BYTES)}


def test_packet_geometry_is_defined_once():
    from purlin import snac
    from purlin.snac import protocol

    root = Path(abi.__file__).resolve().parents[2]
    headers = [*(root / "csrc").rglob("*.h"), *(root / "csrc").rglob("*.cpp"),
               *(root / "purlin" / "cuda" / "include").rglob("*.[ch]*")]
    for path in headers:
        if path.resolve() != abi.ABI_HEADER.resolve():
            assert not re.search(r"constexpr \w+ kPacket", path.read_text()), f"{path} defines packet constants"
    for path in Path(snac.__file__).resolve().parents[1].rglob("*.py"):
        if path != Path(protocol.__file__).resolve():
            assert not re.search(r"^PACKET_\w*BYTES = ", path.read_text(), re.M), f"{path} defines packet sizes"


def test_dtype_sizes_agree_with_the_kernel_abi():
    sizes = re.search(r"constexpr int kDTypeBytes\[\] = \{([^}]*)\};", HEADER).group(1)
    by_code = {code: size for code, size in P.DTYPES.values()}
    assert [int(v) for v in sizes.split(",")] == [by_code[c] for c in range(len(by_code))]
    assert f"constexpr int kDTypeCount = {len(P.DTYPES)};" in HEADER


def test_device_counts_enums_agree():
    from purlin.coll.layouts import LayoutKind

    assert cpp_enum("LayoutKind") == {k.capitalize(): v for k, v in abi.LAYOUT_KINDS.items()}
    assert set(abi.LAYOUT_KINDS) == {k.value for k in LayoutKind} - {"named"}
    assert cpp_enum("CountsError") == abi.COUNTS_ERRORS
    assert re.search(rf"2: bad counts", HEADER) and abi.BAD_COUNTS == 2
