"""Running an imported module on every process of its world, as JAX and
StableHLO mean it.

A value is global (one array: what `main` of a JAX module takes and gives)
or local (one array per process, by rank). A manual computation splits its
global operands by its in_shardings along its manual axes, runs its body on
every process and puts the results together by its out_shardings; GSPMD's
`custom_call @SPMDFullToShardShape` splits by the sharding of the
`custom_call @Sharding` before it and `@SPMDShardToFullShape` puts together
by its own. Every other op runs on numpy (`tensor_reference`) once for a
global value or on each process for a local one, and a `tensor_coll.call`
hands its operands, every process's, to the caller's `CollCall`: that is where
purlin runs the collectives. `stablehlo.while`, `case` and `if` run their
regions on these values, so a collective inside runs where it is; where the
processes part ways (a predicate that differs among them) each keeps what its
own path gives, and a collective on such a path is refused.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from math import prod
from typing import TypeVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr, TensorType
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from purlin.frontends import sdy
from purlin.frontends import stablehlo as shlo
from purlin.frontends.shardings import ShardingError, hlo_layout, sdy_layout
from purlin.frontends.tensor_coll import CallOp as CollCallOp
from purlin.frontends.tensor_coll import counts
from purlin.frontends.tensor_functions import op_name
from purlin.frontends.tensor_reference import MAX_TRIPS, ReferenceError, branch_index, evaluate, tensor_type


class SpmdError(ValueError):
    """A module the machine cannot run: the message names the op."""


@dataclass
class Global:
    value: np.ndarray


@dataclass
class Local:
    values: list[np.ndarray]


Value = Global | Local
Env = ChainMap[SSAValue, Value]
T = TypeVar("T")
# (coll function, its inputs: per input the flat array of each rank) -> its outputs, alike.
CollCall = Callable[[FuncOp, list[list[np.ndarray]]], list[list[np.ndarray]]]


def _where(op: Operation) -> str:
    from purlin.diagnostics import where

    return where(op)


def _read(env: Mapping[SSAValue, T], op: Operation) -> list[T]:
    """The values of `op`'s operands; one not computed yet (the parser takes
    uses before definitions) is a diagnostic."""
    for k, v in enumerate(op.operands):
        if v not in env:
            raise SpmdError(f"{_where(op)}: '{op_name(op)}' reads operand {k} before it is computed")
    return [env[v] for v in op.operands]


def holds_sharding(func: FuncOp, funcs: dict[str, FuncOp]) -> bool:
    """Whether `func` (or what it calls) splits global values among the
    devices: a manual computation or GSPMD's SPMDFullToShardShape."""
    seen: set[str] = set()
    todo = [func]
    while todo:
        f = todo.pop()
        if f.sym_name.data in seen:
            continue
        seen.add(f.sym_name.data)
        for op in f.walk():
            if isinstance(op, sdy.ManualComputationOp) or (
                    isinstance(op, shlo.CustomCallOp) and op.target == "SPMDFullToShardShape"):
                return True
            if isinstance(op, CallOp) and op.callee.root_reference.data in funcs:
                todo.append(funcs[op.callee.root_reference.data])
    return False


class Machine:
    """Runs functions of `module` on `replicas` x `partitions` processes."""

    def __init__(self, module: ModuleOp, replicas: int, partitions: int, call: CollCall):
        self.funcs = {f.sym_name.data: f for f in module.body.ops if isinstance(f, FuncOp)}
        self.meshes = {m.sym_name.data: m.mesh for m in module.body.ops if isinstance(m, sdy.MeshOp)}
        self.replicas, self.partitions = replicas, partitions
        self.world = replicas * partitions
        self.call = call
        self.divergent: Operation | None = None  # the op whose regions processes run apart, if any

    def run(self, func: FuncOp, args: Sequence[Value]) -> list[Value]:
        """The results of `func` on `args`."""
        if counts(func) is not None:
            return self.coll(func, list(args), func)
        if len(args) != len(func.body.block.args):
            raise SpmdError(f"@{func.sym_name.data} takes {len(func.body.block.args)} arguments, got {len(args)}")
        return self.block(func.body.block, list(args))

    def block(self, block: Block, args: list[Value], outer: Env | None = None) -> list[Value]:
        """The block's results; its ops may read the values of `outer` (a region's enclosing blocks)."""
        env: Env = ChainMap(dict(zip(block.args, args)), *([outer] if outer is not None else []))
        for op in block.ops:
            if isinstance(op, ReturnOp | sdy.ReturnOp | shlo.ReturnOp):
                return _read(env, op)
            values = _read(env, op)
            if isinstance(op, shlo.WhileOp):
                results = self.loop(op, values, env)
            elif isinstance(op, shlo.CaseOp | shlo.IfOp):
                results = self.branch(op, values[0], env)
            else:
                results = self.op(op, values)
            for r, v in zip(op.results, results):
                env[r] = v
        raise SpmdError("a block without a terminator")

    def per_rank(self, value: Value, pick: Callable[[np.ndarray], int]) -> list[int]:
        return [pick(a) for a in self.local(value)]

    def branch(self, op: shlo.CaseOp | shlo.IfOp, index: Value, env: Env) -> list[Value]:
        """The branch each process picks; where they pick differently, each
        process keeps its own branch's results."""
        picks = self.per_rank(index, lambda a: branch_index(op, a))
        if len(set(picks)) == 1:
            return self.block(op.branches[picks[0]].block, [], env)
        with self.diverging(op):
            ran = {k: self.block(op.branches[k].block, [], env) for k in sorted(set(picks))}
        return [Local([self.local(ran[k][j])[r] for r, k in enumerate(picks)]) for j in range(len(op.results))]

    def loop(self, op: shlo.WhileOp, values: list[Value], env: Env) -> list[Value]:
        """The body while the cond holds; a process whose cond fails keeps its
        values while the others go on."""
        done = [False] * self.world
        for _ in range(MAX_TRIPS):
            (cond,) = self.block(op.cond.block, values, env)
            go = [g and not d for g, d in zip(self.per_rank(cond, lambda a: bool(a.reshape(()))), done)]
            if not any(go):
                return values
            if all(go):
                values = self.block(op.body.block, values, env)
                continue
            with self.diverging(op):
                new = self.block(op.body.block, values, env)
            values = [Local([self.local(n)[r] if go[r] else self.local(v)[r] for r in range(self.world)])
                      for n, v in zip(new, values)]
            done = [not g for g in go]
        raise SpmdError(f"{_where(op)}: '{op.name}' ran {MAX_TRIPS} times and goes on; purlin's reference stops "
                        "there")

    @contextmanager
    def diverging(self, op: Operation) -> Iterator[None]:
        """Processes take different paths through `op`'s regions."""
        before, self.divergent = self.divergent, self.divergent or op
        try:
            yield
        finally:
            self.divergent = before

    def op(self, op: Operation, args: list[Value]) -> list[Value]:
        if isinstance(op, sdy.ManualComputationOp):
            return self.manual(op, args)
        if isinstance(op, CallOp):
            callee = self.funcs.get(op.callee.root_reference.data)
            if callee is None:
                raise SpmdError(f"{_where(op)}: no function @{op.callee.root_reference.data}")
            return self.run(callee, args)
        if isinstance(op, CollCallOp):
            func = op.function()
            assert func is not None
            return self.coll(func, args, op)
        if isinstance(op, shlo.CustomCallOp) and op.target == "SPMDFullToShardShape":
            return [self.full_to_shard(op, args[0])]
        if isinstance(op, shlo.CustomCallOp) and op.target == "SPMDShardToFullShape":
            return [self.shard_to_full(op, args[0])]
        if isinstance(op, shlo.CollectiveBase):
            raise SpmdError(f"{_where(op)}: '{op.name}' was not imported: run convert-stablehlo-to-coll first")
        local = any(isinstance(a, Local) for a in args) or isinstance(op, shlo.PartitionIdOp | shlo.ReplicaIdOp)
        try:
            if not local:
                return [Global(v) for v in evaluate(op, [a.value for a in args], (0, 0), self.region)]  # type: ignore[union-attr]
            per_rank = [evaluate(op, [self.local(a)[r] for a in args], divmod(r, self.partitions), self.region)
                        for r in range(self.world)]
        except ReferenceError as e:
            raise SpmdError(f"{_where(op)}: {e}") from None
        return [Local([p[k] for p in per_rank]) for k in range(len(op.results))]

    def region(self, block: Block, args: list[np.ndarray]) -> list[np.ndarray]:
        """A reduction's region, on one process's arrays."""
        env: dict[SSAValue, np.ndarray] = dict(zip(block.args, args))
        for op in block.ops:
            if isinstance(op, shlo.ReturnOp):
                return _read(env, op)
            for r, v in zip(op.results, evaluate(op, _read(env, op), (0, 0), self.region)):
                env[r] = v
        raise SpmdError("a region without a terminator")

    def local(self, value: Value) -> list[np.ndarray]:
        return value.values if isinstance(value, Local) else [value.value] * self.world

    def coll(self, func: FuncOp, args: list[Value], at: Operation) -> list[Value]:
        if self.divergent is not None:
            raise SpmdError(f"{_where(self.divergent)}: processes take different paths through "
                            f"'{self.divergent.name}', and one holds a collective ({_where(at)}); purlin runs a "
                            "collective that every process reaches")
        n = counts(func)
        assert n is not None
        n_in, n_out = n
        types = func.function_type.inputs.data
        ins = [[np.ascontiguousarray(a).reshape(-1) for a in self.local(v)] for v in args]
        outs = self.call(func, ins)
        results = []
        shapes = [r.type for r in at.results] if at is not func else types[n_in:n_in + n_out]
        for t, per_rank in zip(shapes, outs):
            shape = tuple(t.get_shape())  # type: ignore[attr-defined]
            results.append(Local([a.reshape(shape) for a in per_rank]))
        return results

    def mesh(self, sharding: sdy.TensorShardingAttr, op: Operation) -> sdy.MeshAttr:
        if isinstance(sharding.mesh, sdy.MeshAttr):
            return sharding.mesh
        assert isinstance(sharding.mesh, SymbolRefAttr)
        name = sharding.mesh.root_reference.data
        if name not in self.meshes:
            raise SpmdError(f"{_where(op)}: no sdy.mesh @{name}")
        return self.meshes[name]

    def manual(self, op: sdy.ManualComputationOp, args: list[Value]) -> list[Value]:
        manual = [a.data for a in op.manual_axes.axes.data]
        locals_: list[Value] = []
        try:
            for k, (value, sharding, arg) in enumerate(zip(args, op.in_shardings.shardings.data, op.block.args)):
                if not isinstance(value, Global):
                    raise SpmdError(f"{_where(op)}: a manual computation inside a per-device program is not "
                                    "supported")
                layout = sdy_layout(sharding, self.mesh(sharding, op), manual, value.value.shape)
                self.fits(op, f"operand {k}", layout.local_shape, arg.type)
                locals_.append(Local(layout.split(value.value)))
            results = self.block(op.block, locals_)
            out = []
            for k, (value, sharding, r) in enumerate(zip(results, op.out_shardings.shardings.data, op.results)):
                shape, dt = tensor_type(r.type)
                layout = sdy_layout(sharding, self.mesh(sharding, op), manual, shape)
                out.append(Global(layout.assemble(self.local(value), dt)))
            return out
        except (ShardingError, ReferenceError) as e:
            raise SpmdError(f"{_where(op)}: '{op.name}': {e}") from None

    def fits(self, op: Operation, what: str, local_shape: Callable[[int], tuple[int, ...]], t) -> None:
        want = tuple(t.get_shape())
        for r in range(self.world):
            if local_shape(r) != want:
                raise SpmdError(f"{_where(op)}: '{op_name(op)}': {what}'s part on device {r} is "
                                f"{list(local_shape(r))}, but the program takes {t}")

    def full_to_shard(self, op: shlo.CustomCallOp, value: Value) -> Value:
        source = op.operands[0].owner
        text = source.attributes.get("mhlo.sharding") if isinstance(source, shlo.CustomCallOp) else None
        if not isinstance(value, Global) or not isinstance(text, StringAttr):
            raise SpmdError(f"{_where(op)}: '{op.name}' @SPMDFullToShardShape needs a global operand from a "
                            "custom_call @Sharding with an mhlo.sharding")
        try:
            layout = hlo_layout(text.data, value.value.shape, self.world)
        except ShardingError as e:
            raise SpmdError(f"{_where(source)}: {e}") from None
        self.fits(op, "the operand", layout.local_shape, op.results[0].type)
        return Local(layout.split(value.value))

    def shard_to_full(self, op: shlo.CustomCallOp, value: Value) -> Value:
        text = op.attributes.get("mhlo.sharding")
        if not isinstance(text, StringAttr):
            raise SpmdError(f"{_where(op)}: '{op.name}' @SPMDShardToFullShape needs an mhlo.sharding")
        t = op.results[0].type
        assert isinstance(t, TensorType)
        try:
            shape, dt = tensor_type(t)
            layout = hlo_layout(text.data, shape, self.world)
            return Global(layout.assemble(self.local(value), dt))
        except (ShardingError, ReferenceError) as e:
            raise SpmdError(f"{_where(op)}: {e}") from None
