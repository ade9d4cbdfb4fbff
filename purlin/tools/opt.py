"""`purlin-opt`: the pass-pipeline driver, like mlir-opt.

Bad input (syntax, verifier failures, unknown passes or options) is reported
as a diagnostic on stderr with a non-zero exit, never as a traceback; a parse
error as mlir-opt prints it, `FILE:LINE:COL: error: MESSAGE` then the source
line and a caret. With --split-input-file every chunk is processed and each
failing one reported. As with mlir-opt, input without operations is an empty
module, and `-` (or no file) is standard input.

--verify-diagnostics: when the input holds `// expected-error {{...}}`
annotations, every diagnostic must be annotated and every annotation met, as
with mlir-opt (see purlin.diagnostics.parse_annotations); one that cannot be
read is an error. Without any, it follows xDSL: each chunk's diagnostic is
printed on stdout and the exit is 0, for FileCheck to check.
"""

import argparse
import dataclasses
import re
import sys
import time
from collections.abc import Sequence
from io import BytesIO
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, MultipleSpansParseError, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from purlin.diagnostics import (
    LocatedParser,
    Produced,
    check_expected,
    decode_source,
    format_parse_error,
    parse_annotations,
    parse_error_notes,
)
from purlin.compile.universe import PASSES, TARGETS, dialect_factories

EXIT_STATUS = """exit status:
  0  every input chunk was processed
  1  an error diagnostic: input that is not text or does not parse or verify, a pass that
     fails or does not apply, an unknown pass or pass option
  2  bad command-line arguments (an unknown target among them)"""


class PurlinOptMain(xDSLOptMain):
    version_format = "purlin-opt (xdsl {xdsl_version})"

    def register_all_dialects(self) -> None:
        for name, factory in dialect_factories().items():
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
        helps = {
            "verify_diagnostics": "check the input's `// expected-error {{...}}` annotations as "
            "mlir-opt does (exit 1 unless every diagnostic is annotated and every annotation "
            "met); in an input without any, print each diagnostic on stdout and exit 0, as xDSL does",
            "input_file": "path to input file; `-` or none: standard input",
            "split_input_file": "split the input at `// -----` lines and process every chunk, "
            "reporting each one that fails",
        }
        for action in arg_parser._actions:
            action.help = helps.get(action.dest, action.help)
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

    def run(self) -> bool:
        """Process every chunk; True when each succeeded, or, under
        --verify-diagnostics, failed as it was expected to."""
        chunks, file_extension = self.prepare_input()
        texts = []
        for chunk, offset in chunks:
            texts.append((chunk.read(), offset))
            chunk.close()
        name = self.get_input_name()
        annotations = [
            parse_annotations(data.decode("utf-8", "replace"), name, offset) if self.args.verify_diagnostics
            else ([], []) for data, offset in texts
        ]
        checking = any(e or p for e, p in annotations)
        output = self.prepare_output()
        ok = True
        try:
            for i, ((data, offset), (expected, unreadable)) in enumerate(zip(texts, annotations)):
                if i > 0:
                    output.write("// -----\n")
                error = None
                try:
                    module = self.parse_chunk(BytesIO(data), file_extension, offset)
                    if module is not None:
                        self.apply_passes(module)
                        output.write(self.output_resulting_program(module))
                except ParseError as e:
                    e.span = dataclasses.replace(e.span, line_offset=offset)
                    if isinstance(e, MultipleSpansParseError):
                        e.refs = [(dataclasses.replace(s, line_offset=offset), m) for s, m in e.refs]
                    error = e
                except DiagnosticException as e:
                    error = e
                output.flush()
                if checking:
                    produced = [] if error is None else _produced(error, name)
                    problems = unreadable + check_expected(name, expected, produced)
                    for p in problems:
                        print(p, file=sys.stderr)
                    ok &= not problems
                elif error is not None:
                    ok &= self._report(error)
        finally:
            if output is not sys.stdout:
                output.close()
        return ok

    def _report(self, error: ParseError | DiagnosticException) -> bool:
        """Print a chunk's diagnostic; True when the options say it is expected
        (xDSL's --parsing-diagnostics and --verify-diagnostics print it on stdout)."""
        shown = self.args.parsing_diagnostics if isinstance(error, ParseError) else (
            self.args.verify_diagnostics
        )
        if shown:
            print(error)
            for note in getattr(error, "__notes__", ()):
                print(note)
            return True
        _fail(_message(error))
        return False

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        # `-` is standard input, as for mlir-opt.
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        return "stdin" if self.args.input_file == "-" else super().get_input_name()

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        # xDSL drops the chunk's line offset for frontends; keep it so that
        # diagnostics under --split-input-file point at lines of the file.
        self._chunk_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def prepare_output(self) -> IO[str]:
        """As xDSL's, but binary targets (-t cubin) get an output that writes
        each character as one byte."""
        from purlin.cuda.target import BINARY_ENCODING, CubinTarget

        if self.args.target != CubinTarget.name:
            return super().prepare_output()
        if self.args.output_file is None:
            return _BytesOut(sys.stdout.buffer, BINARY_ENCODING)  # type: ignore[return-value]
        return open(self.args.output_file, "w", encoding=BINARY_ENCODING, newline="")

    def setup_pipeline(self) -> None:
        """As xDSL's, but verification failures are located diagnostics."""
        # Here, not at import: --help and a bad command line need none of the pipeline.
        from purlin.compile.pipeline import check_step, option_names

        started = time.perf_counter()

        def between(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            nonlocal started
            if self.args.time_passes and previous is not None:
                print(f"Pass {previous.name} took {time.perf_counter() - started} seconds")
            check_step(previous, module, following, verify=not self.args.disable_verify)
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
                f"invalid pass pipeline '{self.args.passes}': {option_names(str(e))}; "
                f"purlin's passes are {', '.join(PASSES)} (--help lists all)"
            ) from None


def _produced(error: ParseError | DiagnosticException, name: str) -> list[Produced]:
    """The diagnostics of an error of file `name`: its own and its notes, each
    with where it is (None when it is not located) and its message."""
    if isinstance(error, ParseError):
        located = [("error", error.span, error.msg), *(("note", s, m) for s, m in parse_error_notes(error))]
        return [(kind, (span.get_location().line, span.get_location().col), m) for kind, span, m in located]
    text = str(error)
    if m := re.search(re.escape(name) + r":(\d+):(\d+): (?:error: )?", text):
        return [("error", (int(m.group(1)), int(m.group(2))), text[m.end():])]
    return [("error", None, text)]


def _message(error: ParseError | DiagnosticException) -> str:
    return format_parse_error(error) if isinstance(error, ParseError) else str(error)


class _BytesOut:
    """Text written as one byte per character onto `binary`, which stays open."""

    def __init__(self, binary: IO[bytes], encoding: str):
        self.binary = binary
        self.encoding = encoding

    def write(self, text: str) -> int:
        self.binary.write(text.encode(self.encoding))
        return len(text)

    def flush(self) -> None:
        self.binary.flush()

    def close(self) -> None:
        self.flush()


def _fail(message: str) -> int:
    message = message.rstrip()
    if ": error: " not in message and not message.startswith("error:"):
        message = f"error: {message}"
    print(message, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        if not PurlinOptMain(description="purlin pass-pipeline driver", args=argv).run():
            return 1
    except (ParseError, DiagnosticException) as e:
        return _fail(_message(e))
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
