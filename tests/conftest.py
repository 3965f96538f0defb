"""Offscreen Qt for every test, set before any QApplication exists; user folders in a temp dir."""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_HOME", tempfile.mkdtemp(prefix="playground-test-"))
