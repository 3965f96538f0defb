"""A worker that went away before fetching a tensor's file descriptor is not an error."""

from __future__ import annotations

import sys

from customgrad.workers import processes


def test_a_peer_gone_before_its_descriptor_is_not_an_error(monkeypatch):
    from multiprocessing import resource_sharer

    seen = []
    monkeypatch.setattr(resource_sharer, "sys", sys)
    monkeypatch.setattr(sys, "excepthook", lambda *info: seen.append(info[0]))
    processes._quiet_resource_sharer()
    assert resource_sharer.sys is not sys and resource_sharer.sys.modules is sys.modules
    for kind in (ConnectionResetError, BrokenPipeError, EOFError, ValueError):
        try:
            raise kind("from the resource sharer's thread")
        except Exception:  # as resource_sharer._serve hands it on
            resource_sharer.sys.excepthook(*sys.exc_info())
    assert seen == [ValueError]  # any other error is said as before
