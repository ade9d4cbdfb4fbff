"""The README's examples run as written: the Python blocks, and the tool
commands of its Tools section that need neither a GPU nor a file to fill in."""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from purlin.tools.opt import main as opt_main
from purlin.tools.run import main as run_main

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


@pytest.mark.parametrize("title", ["Python API", "Counts on the device"])
def test_a_python_example_runs_and_prints_what_it_says(title):
    code = re.search(r"```python\n(.*?)```", section(title), re.S).group(1)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    said = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    assert printed.getvalue().strip() == said


TOOLS = {"purlin-opt": opt_main, "purlin-run": run_main}
COMMANDS = [
    line.removeprefix(".venv/bin/").split("#")[0].strip()
    for line in re.search(r"```sh\n(.*?)```", section("Tools"), re.S).group(1).splitlines()
    if line.startswith((".venv/bin/purlin-opt", ".venv/bin/purlin-run"))
]
RUNNABLE = [c for c in COMMANDS if "FILE" not in c and "cuda" not in c and "--help" not in c]


def test_the_commands_are_found():
    assert len(RUNNABLE) >= 4, COMMANDS


@pytest.mark.parametrize("command", RUNNABLE)
def test_a_tools_command_runs(monkeypatch, capsys, command):
    monkeypatch.chdir(ROOT)
    tool, *argv = shlex.split(command)
    assert TOOLS[tool](argv) == 0, capsys.readouterr()


def test_the_tree_names_every_package_and_top_level_module():
    tree = re.search(r"```\n(purlin/.*?)```", section("Where things live"), re.S).group(1)
    shown = set(re.findall(r"[\w.]+", tree))
    package = ROOT / "purlin"
    packages = {p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    files = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    named = set(re.findall(r"(\w+/)", tree)) | shown
    assert packages - named == set(), "README's tree leaves out these packages"
    assert files - shown == set(), "README's tree leaves out these modules"

