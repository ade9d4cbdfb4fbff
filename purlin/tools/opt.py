"""`purlin-opt`: the pass-pipeline driver, like mlir-opt.

Bad input (syntax, verifier failures, unknown passes or options) is reported
as a diagnostic on stderr with a non-zero exit, never as a traceback.
"""

import argparse
import sys
import time
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    PassFailedException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from purlin.diagnostics import LocatedParser, decode_source, verify_located
from purlin.tools.pass_contracts import check_pipeline_step
from purlin.universe import DIALECTS, PASSES, TARGETS


EXIT_STATUS = """exit status:
  0  every input chunk was processed
  1  an error diagnostic: input that is not text or does not parse or verify, a pass that
     fails or does not apply, an unknown pass or pass option
  2  bad command-line arguments (an unknown target among them)"""


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

    def register_all_targets(self) -> None:
        super().register_all_targets()
        for name, factory in TARGETS.items():
            self.available_targets.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # One per line: purlin's passes are otherwise lost, hyphen-wrapped, among xDSL's.
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = (
            EXIT_STATUS + "\n\npurlin passes:\n" + "\n".join(f"  {name}" for name in PASSES)
        )

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            name = self.get_input_name()
            text = decode_source(io.read(), name, self._chunk_offset)
            return LocatedParser(self.ctx, text, name, self._chunk_offset).parse_module(
                not self.args.no_implicit_module
            )

        self.available_frontends["mlir"] = parse_mlir

    _chunk_offset = 0

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        # xDSL drops the chunk's line offset for frontends; keep it so that
        # diagnostics under --split-input-file point at lines of the file.
        self._chunk_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

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
            check_pipeline_step(previous, module, following)
            if previous and following and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n")
            started = time.perf_counter()

        try:
            self.pipeline = PassPipeline.parse_spec(
                self.available_passes, self.args.passes, between
            )
        except ArgSpecParseError as e:
            # A BaseException in xDSL: it would escape main's handlers as a traceback.
            raise ValueError(str(e)) from None
        except ValueError as e:
            # xDSL's message names neither the pipeline nor where to look.
            raise ValueError(
                f"invalid pass pipeline '{self.args.passes}': {e}; "
                f"purlin's passes are {', '.join(PASSES)} (--help lists all)"
            ) from None


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
