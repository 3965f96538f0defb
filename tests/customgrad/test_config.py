"""customgrad.config: every environment variable read in one place, once, typed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from customgrad import config
from customgrad.config import Config
from customgrad.errors import CustomGradError
from customgrad.workers import isolation, processes

ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults_hold_where_nothing_is_set():
    assert Config.from_environment({}) == Config()
    assert Config() == Config(memory_limit_gib=None, spawn=False, child_nice=5,
                              keep_seconds=300.0, home=None, loop="process", tab=None,
                              no_restore=False)


def test_each_variable_is_read_typed():
    env = {"CUSTOMGRAD_MEMORY_LIMIT_GIB": " 0.5 ", "CUSTOMGRAD_START_METHOD": "Spawn",
           "CUSTOMGRAD_CHILD_NICE": "7", "CUSTOMGRAD_KEEP_SECONDS": "0",
           "AUTOGRAD_PLAYGROUND_HOME": "/tmp/h", "AUTOGRAD_PLAYGROUND_LOOP": "THREAD",
           "AUTOGRAD_PLAYGROUND_TAB": "Inspector", "AUTOGRAD_PLAYGROUND_NO_RESTORE": "1"}
    assert Config.from_environment(env) == Config(
        memory_limit_gib=0.5, spawn=True, child_nice=7, keep_seconds=0.0, home=Path("/tmp/h"),
        loop="thread", tab="inspector", no_restore=True)


@pytest.mark.parametrize("name, text", [("CUSTOMGRAD_CHILD_NICE", "20"),
                                        ("CUSTOMGRAD_CHILD_NICE", "-1"),
                                        ("CUSTOMGRAD_KEEP_SECONDS", "inf"),
                                        ("CUSTOMGRAD_KEEP_SECONDS", "soon"),
                                        ("AUTOGRAD_PLAYGROUND_LOOP", "fibre"),
                                        ("CUSTOMGRAD_START_METHOD", "fork")])
def test_a_value_that_cannot_be_read_leaves_the_default(name, text):
    assert Config.from_environment({name: text}) == Config()


@pytest.mark.parametrize("text", ["lots", "-1", "inf", "nan"])
def test_a_bad_memory_limit_is_an_error_where_the_limit_is_used(text):
    """Not at reading: the app starts, and the check that would start a worker says why."""
    read = Config.from_environment({"CUSTOMGRAD_MEMORY_LIMIT_GIB": text})
    with pytest.raises(CustomGradError, match=f"CUSTOMGRAD_MEMORY_LIMIT_GIB={text} is not a "
                                              r"number of GiB \(0: no limit\)"):
        read.memory_limit()


def test_the_environment_is_read_once(monkeypatch, configure):
    config.use(None)
    monkeypatch.setenv("CUSTOMGRAD_START_METHOD", "spawn")
    assert config.current().spawn
    monkeypatch.delenv("CUSTOMGRAD_START_METHOD")
    assert config.current().spawn  # read once: a later change of the environment is not seen
    with config.changed(spawn=False) as changed:
        assert config.current() is changed and not changed.spawn
    assert config.current().spawn


def test_the_readers_read_the_configuration(configure):
    configure(memory_limit_gib=0.5, spawn=True)
    assert isolation.default_memory_limit() == 2**29
    assert not processes.fork_server()
    configure(memory_limit_gib=0.0)
    assert isolation.default_memory_limit() == 0


def test_no_module_reads_a_variable_but_the_configuration():
    """One place says which variables there are: no other module names one of ours."""
    ours = re.compile(r"""["'](CUSTOMGRAD|AUTOGRAD_PLAYGROUND)_[A-Z_]+["']""")
    found = [f"{path.relative_to(ROOT)}:{n}"
             for folder in ("customgrad", "playground") for path in (ROOT / folder).rglob("*.py")
             if path.name != "config.py"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if ours.search(line) and not line.lstrip().startswith("#")]
    assert found == []


def _keep_seconds_in_child(channel) -> float:
    return config.current().keep_seconds


def test_a_worker_process_reads_the_environment_it_is_started_with(monkeypatch):
    """The fork server read its configuration when it started (importing the workers'
    modules); a child takes its parent's environment as it is now, and reads that."""
    monkeypatch.delenv("CUSTOMGRAD_KEEP_SECONDS", raising=False)
    isolation.call(_keep_seconds_in_child)  # the fork server runs, its configuration read
    monkeypatch.setenv("CUSTOMGRAD_KEEP_SECONDS", "7")
    assert isolation.call(_keep_seconds_in_child) == 7.0
