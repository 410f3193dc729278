"""Ctrl-C during a compile in the build's own process ends the build as an interruption, also when
the code it lands in fails in its own cleanup (as Triton 3.6's knobs.scope() does)."""
import os
import signal
import time

import pytest

from taot.compile import engine as build_module


def _interrupted_compile_whose_cleanup_fails(job):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the build's SIGINT handler raises KeyboardInterrupt here
    finally:
        # what knobs.scope()'s finally does when interrupted before it bound `orig`
        raise UnboundLocalError("cannot access local variable 'orig' where it is not associated with a value")


def _failing_compile(job):
    raise UnboundLocalError("a real bug in a compile")


def test_a_ctrl_c_whose_cleanup_fails_is_still_an_interruption(monkeypatch):
    monkeypatch.setattr(build_module.job_module, "run_job", _interrupted_compile_whose_cleanup_fails)
    started = time.monotonic()
    with pytest.raises(build_module.Interrupted) as interrupted:
        build_module.run_jobs(["job"], workers=1)
    assert time.monotonic() - started < 4
    assert (interrupted.value.compiled, interrupted.value.total) == (0, 1)
    assert str(interrupted.value) == "0 of 1 compiled; run the same command to continue"


def test_without_a_ctrl_c_the_same_error_is_the_compiles_own(monkeypatch):
    monkeypatch.setattr(build_module.job_module, "run_job", _failing_compile)
    with pytest.raises(UnboundLocalError, match="a real bug in a compile"):
        build_module.run_jobs(["job"], workers=1)
