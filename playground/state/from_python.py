"""The Target of a Function handed over by ``playground.show``: how other processes (and a
saved session) will load it again.

- A class in an importable module is named ``module:Class``, like any import target.
- A class from a ``__main__`` script or a notebook cell has no module to import again: its
  source is captured (:func:`customgrad.problems.capture.capture`: the class, the imports and
  helpers it uses) into the editor's folder, so workers run that text and a session keeps it.
- Where the capture is incomplete (the class uses an object that cannot be written out), the
  Function stays in this process: every job runs on a thread here, and a session cannot
  restore it (:data:`customgrad.targets.loader.PROCESS_LOCAL`).

In every case the window holds the caller's own class object.
"""

from __future__ import annotations

import os

from customgrad.problems.capture import capture, importable
from customgrad.targets.loader import PROCESS_LOCAL, Target, import_target
from playground.state import paths
from playground.state.session_files import FunctionRef, write_editor_source


def target_for(function: type) -> tuple[Target, str | None]:
    """The Target for ``function``, and a notice for the user where it must stay in this
    process (None where it need not)."""
    name = function.__name__
    spec = importable(function)
    if spec is not None:
        module, _, class_name = spec.partition(":")
        return import_target(module, class_name, function), None
    captured = capture(function)
    if captured.complete:
        wanted = paths.editor_dir() / f"{name}.py"
        ref = write_editor_source(FunctionRef("editor", f"{wanted}:{name}", name,
                                              str(wanted), captured.text))
        assert ref.file is not None  # (write_editor_source gives an editor ref its file)
        label = f"{name} ({os.path.basename(ref.file)})"
        return Target(ref.spec, function, label, file=ref.file, code=captured.text), None
    notice = (f"{name} runs in this process, on threads (not in a worker process, and a saved "
              f"session cannot restore it): {captured.why}.")
    return Target(f"{PROCESS_LOCAL}:{name}", function, f"{name} (your program)"), notice
