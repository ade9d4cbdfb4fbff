"""`purlin-opt`: the pass-pipeline driver, like mlir-opt.

Bad input (syntax, verifier failures, unknown passes or options) is reported
as a diagnostic on stderr with a non-zero exit, never as a traceback.
"""

import sys
import time
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from purlin.diagnostics import LocatedParser, verify_located
from purlin.universe import DIALECTS, PASSES


class PurlinOptMain(xDSLOptMain):
    version_format = "purlin-opt (xdsl {xdsl_version})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            return LocatedParser(
                self.ctx, io.read(), self.get_input_name()
            ).parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def setup_pipeline(self) -> None:
        """As xDSL's, but verification failures are located diagnostics."""
        started = time.perf_counter()

        def between(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            nonlocal started
            if self.args.time_passes and previous is not None:
                print(f"Pass {previous.name} took {time.perf_counter() - started} seconds")
            if not self.args.disable_verify:
                verify_located(module, previous.name if previous else None)
            if previous and following and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n")
            started = time.perf_counter()

        self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, between)


def _fail(message: str) -> int:
    message = message.rstrip()
    if ": error: " not in message and not message.startswith("error:"):
        message = f"error: {message}"
    print(message, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        PurlinOptMain(description="purlin pass-pipeline driver", args=argv).run()
    except (ParseError, DiagnosticException, PassFailedException) as e:
        return _fail(str(e))
    except ValueError as e:
        # Raised by xDSL for unknown passes, pass options and file types.
        return _fail(str(e))
    except OSError as e:
        return _fail(f"error: {e.strerror}: {e.filename}")
    return 0


def main_exit() -> None:
    sys.exit(main())


if __name__ == "__main__":
    main_exit()
