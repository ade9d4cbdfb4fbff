import os
import sys

import lit.formats

config.name = "purlin"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "inputs"]

# Tools come from the interpreter's environment (the repository's venv).
bindir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bindir, os.environ.get("PATH", "")])
# lit clears the environment: a PYTHONPATH that picks the purlin under test (a worktree's) goes through.
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
config.substitutions.append(("%python", sys.executable))
# A worktree's checkout is found through PYTHONPATH (lit starts the tools with
# a clean environment otherwise, and the venv's purlin would load).
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
