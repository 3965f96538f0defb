"""Offscreen Qt for every test, set before any QApplication exists."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
