"""The JSON form, for people and for `-t plan-json`: enums by lower-case name,
instruction fields only where they differ from their defaults."""

from __future__ import annotations

import json
from dataclasses import asdict
from enum import IntEnum
from typing import Any, Self

import purlin.plan.model as m
from purlin.plan.validate import check_plan

_DEFAULT = m.Instr(m.Op.WAIT)
_INSTR_ENUMS = {"base": m.Base, "order": m.Order, "scope": m.Scope, "redop": m.RedOp}


class JsonForm:
    """`Plan.to_json` and `Plan.from_json`."""

    def to_json(self) -> str:
        doc = {
            "format": m.FORMAT,
            "version": self.version,
            "arch": self.arch,
            "world": self.world,
            "dtype": self.dtype,
            "input_elems": self.input_elems,
            "output_elems": self.output_elems,
            "advance": self.advance,
            "kernel": {
                "threads": self.threads,
                "roles": [{"kind": r.kind.name.lower(), "blocks": r.blocks} for r in self.roles],
            },
            "buffers": [
                {"name": b.name, "kind": b.kind.name.lower(), "slots": b.slots, "elems": b.elems}
                for b in self.buffers
            ],
            "signals": [{"name": s.name, "slots": s.slots} for s in self.signals],
            "ranks": [[[_instr_doc(i) for i in role] for role in rank] for rank in self.programs],
        }
        if self.in_place:
            doc["in_place"] = True
        if self.symmetric:
            doc["symmetric"] = True
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Self:
        try:
            doc = json.loads(text)
            _check_format(doc)
            kernel = doc["kernel"]
            plan = cls(
                doc["arch"], _num(doc["world"], "world"), doc["dtype"], _num(doc["input_elems"], "input_elems"),
                _num(doc["output_elems"], "output_elems"), _num(doc["advance"], "advance"),
                _num(kernel["threads"], "threads"),
                [m.RoleSpec(_enum(m.RoleKind, r["kind"], "role"), _num(r["blocks"], "role blocks"))
                 for r in kernel["roles"]],
                [m.BufferSpec(b["name"], _enum(m.BufKind, b["kind"], "buffer"), _num(b["slots"], "buffer slots"),
                            _num(b["elems"], "buffer elems")) for b in doc["buffers"]],
                [m.SignalSpec(s["name"], _num(s["slots"], "signal slots")) for s in doc["signals"]],
                [[[_instr(i, f"rank {r} role {k} instruction {n}") for n, i in enumerate(role)]
                  for k, role in enumerate(rank)] for r, rank in enumerate(doc["ranks"])],
                in_place=doc.get("in_place", False) is True,
                symmetric=doc.get("symmetric", False) is True,
            )
        except m.PlanError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise m.PlanError(f"malformed plan JSON: {type(e).__name__}: {e}") from None
        check_plan(plan, plan.programs, plan.symmetric)
        return plan


def _instr_doc(i: m.Instr) -> dict:
    d = {"op": i.op.name.lower(), "mech": i.mech.name.lower()}
    for k, v in asdict(i).items():
        if k in ("op", "mech") or v == getattr(_DEFAULT, k):
            continue
        d[k] = _jsonable(getattr(i, k))
    return d


def _jsonable(v):
    if isinstance(v, IntEnum):
        return v.name.lower()
    if isinstance(v, m.Ref):
        return {"space": v.space.name.lower(), "rank": v.rank, "buf": v.buf, "slot": v.slot,
                "offset": v.offset}
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    return v


def _check_format(doc: dict) -> None:
    if doc.get("format") != m.FORMAT:
        raise m.PlanError(f"not a purlin plan (format {doc.get('format')!r})")
    if doc.get("version") != m.VERSION:
        raise m.PlanError(
            f"plan format version {doc.get('version')} is not supported (this reader reads {m.VERSION})"
        )


def _num(v: Any, what: str) -> int:
    # JSON numbers that are not int64 (floats, booleans, huge) would
    # slip past validate and break encode or a runtime.
    if isinstance(v, bool) or not isinstance(v, int) or not m.INT64[0] <= v <= m.INT64[1]:
        raise m.PlanError(f"{what}: {v!r} is not an int64")
    return v


def _enum(kind: type[IntEnum], name: Any, what: str) -> IntEnum:
    try:
        return kind[str(name).upper()]
    except KeyError:
        raise m.PlanError(f"{what}: {name!r} is not a valid {kind.__name__}") from None


def _ref(d: dict, what: str) -> m.Ref:
    return m.Ref(_enum(m.Space, d["space"], what), _num(d["rank"], what), _num(d.get("buf", 0), what),
               _num(d.get("slot", 0), what), _num(d.get("offset", 0), what))


def _instr(d: dict, what: str) -> m.Instr:
    kw = {k: v for k, v in d.items() if k not in ("op", "mech")}
    for k in kw:
        if k in _INSTR_ENUMS:
            kw[k] = _enum(_INSTR_ENUMS[k], kw[k], f"{what}: {k}")
        elif k not in ("dst", "srcs"):
            kw[k] = _num(kw[k], f"{what}: {k}")
    if "dst" in kw:
        kw["dst"] = _ref(kw["dst"], what)
    if "srcs" in kw:
        kw["srcs"] = tuple(_ref(s, what) for s in kw["srcs"])
    return m.Instr(_enum(m.Op, d["op"], f"{what}: op"), _enum(m.Mech, d.get("mech", "none"), f"{what}: mech"), **kw)
