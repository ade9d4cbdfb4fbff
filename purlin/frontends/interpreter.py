"""`interpreter.run_parallel`, the harness of StableHLO's interpreter tests:
`programs = [[@f, ..], ..]` runs one function per process, replicas (the
outer list) x partitions (the inner), process id replica * partitions +
partition; the operands are each process's inputs in process order, the
results each process's results in the same order. purlin-run executes it."""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, SymbolRefAttr
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, var_operand_def, var_result_def
from xdsl.utils.exceptions import VerifyException

from purlin.frontends.op_definitions import field


@irdl_op_definition
class RunParallelOp(IRDLOperation):
    name = "interpreter.run_parallel"

    inputs = var_operand_def()
    outputs = var_result_def()
    programs_ = opt_prop_def(Attribute, prop_name="programs")

    @property
    def programs(self) -> list[list[str]]:
        """The function each (replica, partition) runs."""
        attr = field(self, "programs")
        assert isinstance(attr, ArrayAttr)
        return [[p.root_reference.data for p in row.data] for row in attr.data]  # type: ignore[union-attr]

    def verify_(self) -> None:
        attr = field(self, "programs")
        if not (isinstance(attr, ArrayAttr) and attr.data and all(
            isinstance(row, ArrayAttr) and row.data and all(isinstance(p, SymbolRefAttr) for p in row.data)
            for row in attr.data
        )):
            raise VerifyException(f"'{self.name}': programs must be a non-empty [[@f, ..], ..]")
        widths = {len(row.data) for row in attr.data}  # type: ignore[union-attr]
        if len(widths) != 1:
            raise VerifyException(
                f"'{self.name}': every replica runs the same number of partitions, got {sorted(widths)}"
            )


Interpreter = Dialect("interpreter", [RunParallelOp], [])
