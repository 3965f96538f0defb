"""Offscreen Qt for every test, set before any QApplication exists; user folders in a temp dir."""

import dataclasses
import os
import tempfile

import pytest

from customgrad.errors import serialise_ast_parse

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_HOME", tempfile.mkdtemp(prefix="playground-test-"))

# the tests run the app's windows and workers' threads in this process, as the app's entry
# point does (playground.app.application): parses one at a time (customgrad.errors)
serialise_ast_parse()


@pytest.fixture
def configure():
    """``configure(loop="thread", home=path)``: customgrad.config's fields changed for this
    test (the environment is read once, at first use), put back after it."""
    from customgrad import config

    before = config.current()
    yield lambda **changes: config.use(dataclasses.replace(config.current(), **changes))
    config.use(before)
