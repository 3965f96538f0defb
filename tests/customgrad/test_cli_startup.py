"""The CLI's quick commands (--version, --help, list) answer without importing torch (seconds
of the user's wait), and say exactly what they said when torch was imported first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: starts the CLI as a process, timed against a torch import
pytestmark = pytest.mark.slow


ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [["--version"], ["--help"], ["list"], ["list", "--json"], ["check", "--help"],
            ["run", "--help"]]
#: runs each command through cli.main in one process; prints what each wrote and the
#: heavy modules loaded by then
SCRIPT = """
import contextlib, io, json, sys
if sys.argv[1] == "torch-first":
    import torch  # noqa: F401
from customgrad import cli
outputs = []
for argv in json.loads(sys.argv[2]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    outputs.append([code, out.getvalue()])
print(json.dumps({"outputs": outputs, "loaded": [m for m in ("torch", "numpy")
                                                 if m in sys.modules]}))
"""


def _run(mode: str) -> dict:
    env = {**os.environ, "COLUMNS": "100"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode, json.dumps(COMMANDS)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_version_help_and_list_never_import_torch_and_say_the_same():
    light, heavy = _run("light"), _run("torch-first")
    assert light["loaded"] == []
    assert heavy["loaded"][0] == "torch"
    assert [code for code, _ in light["outputs"]] == [0] * len(COMMANDS)
    for argv, said, said_with_torch in zip(COMMANDS, light["outputs"], heavy["outputs"]):
        assert said == said_with_torch, argv
    listed = json.loads(light["outputs"][3][1])
    assert [row["name"] for row in listed][:2] == ["killhead", "abs_uv"]


def test_check_imports_torch_once_in_the_child_only():
    """``customgrad check`` runs the Function in a child of the fork server, which has torch:
    the CLI's own process never imports it (it did, a second import of seconds)."""
    code = ("import sys\nfrom customgrad import cli\n"
            "code = cli.main(['check', 'killhead'])\n"
            "print('exit', code, 'torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "exit 0 False"
    assert "KillHead: PASSED" in proc.stdout


def test_the_dtype_names_the_cli_offers_are_the_engine_s():
    """``--dtype``'s choices are data (no torch for ``--help``): the same as the engine's."""
    from customgrad.defaults import DTYPE_NAMES
    from customgrad.function.dtypes import DTYPES

    assert DTYPE_NAMES == tuple(DTYPES)
