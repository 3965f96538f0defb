"""The window trusts no user code with its own process: a worker that cannot start is said,
never replaced by running the code here."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from customgrad import isolation, processes
from customgrad.errors import TargetError
from playground.workers import jobs


def test_a_worker_that_cannot_start_is_said_and_nothing_runs_in_the_window(tmp_path,
                                                                          monkeypatch):
    """The app imported the user's module itself when no worker process could start: a
    module that crashed then ended the window."""
    def cannot_start(*_args, **_kwargs):
        raise processes.SetupFailed("The worker process could not start (exit code 1).")

    monkeypatch.setattr(jobs, "ISOLATE", True)
    monkeypatch.setattr(isolation, "call", cannot_start)
    path = tmp_path / "mine.py"
    path.write_text("import os\nos._exit(9)\n")
    with pytest.raises(TargetError) as caught:
        jobs.try_import_in_child(("file", str(path), path.read_text()), "mine.py", True)
    assert "mine.py was not imported: The worker process could not start" in str(caught.value)
    assert caught.value.file == str(path)
