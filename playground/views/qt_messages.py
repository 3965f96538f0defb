"""Qt's own messages on stderr, less the noise that means nothing to a user: the offscreen
platform's "This plugin does not support propagateSizeHints()" (printed at every window a
``--screenshot`` or a notebook's picture lays out). Every other message reaches stderr as
Qt would print it."""

from __future__ import annotations

import re
import sys

from PySide6.QtCore import QtMsgType, qFormatLogMessage, qInstallMessageHandler

#: a platform plugin saying it lacks a feature it never needed here
NOISE = re.compile(r"This plugin does not support [\w:]+\(\)")


class _Filter:
    """The installed handler: drops :data:`NOISE`, hands the rest to the handler before it
    (Qt's default prints to stderr, as this does where there was none)."""

    def __init__(self):
        self.previous = None

    def __call__(self, mode: QtMsgType, context, message: str) -> None:
        if NOISE.fullmatch(message.strip()):
            return
        if self.previous is not None:
            self.previous(mode, context, message)
            return
        sys.stderr.write(f"{qFormatLogMessage(mode, context, message)}\n")


def filter_noise() -> None:
    """Install the filter in front of the handler in place (Qt has one per process); where
    the filter is that handler already, it stays as it is."""
    handler = _Filter()
    previous = qInstallMessageHandler(handler)
    if isinstance(previous, _Filter):
        qInstallMessageHandler(previous)
    else:
        handler.previous = previous
