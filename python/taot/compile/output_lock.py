# The lock that keeps two builds from writing one output folder at once: an flock on
# OUTDIR/.taot.lock, which names its holder (pid, host, start time, command) while held. The lock
# dies with its process, so a killed build never blocks the next one.
import errno
import fcntl
import os
import shlex
import socket
import sys
import time
from pathlib import Path

from ..errors import OutputBusy

LOCK_NAME = ".taot.lock"
# The lock file's path, set for the `taot gen` that build, from-ir and import-cache run in a folder
# whose lock they hold (tools/taot/output_lock.h): gen does not take the lock again.
HELD_BY_PARENT = "TAOT_HELD_LOCK"


class OutputLock:
    """Context manager holding OUTDIR's lock (creating OUTDIR). With `wait`, a busy lock is waited
    for after `notice("waiting for <holder>")`; without, OutputBusy is raised. Not re-entrant: one
    per process and folder."""

    def __init__(self, outdir, wait=True, notice=None):
        self.outdir = Path(outdir)
        self.path = self.outdir / LOCK_NAME
        self.wait = wait
        self.notice = notice
        self.descriptor = None

    def __enter__(self):
        self.outdir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            if not self._acquire(descriptor):
                os.close(descriptor)
                return self
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, (describe_this_process() + "\n").encode(), 0)
        except BaseException:
            os.close(descriptor)
            raise
        self.descriptor = descriptor
        return self

    def _acquire(self, descriptor):
        """True once locked; False where the file system has no locks (the build goes on without)."""
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as error:
            if error.errno in (errno.ENOLCK, errno.EOPNOTSUPP):
                if self.notice is not None:
                    self.notice(f"cannot lock {self.path} ({error.strerror}); writing without the lock")
                return False
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
        holder = holder_of(self.path)
        if not self.wait:
            raise OutputBusy(self.outdir, holder)
        if self.notice is not None:
            self.notice(f"waiting for {holder}")
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        return True

    def __exit__(self, *exc):
        if self.descriptor is not None:
            os.ftruncate(self.descriptor, 0)  # released: the file names no holder
            os.close(self.descriptor)
            self.descriptor = None
        return False


def holder_of(path):
    """What the lock file says about its holder, or a placeholder while the holder is writing it."""
    try:
        text = Path(path).read_text(errors="replace").strip()
    except OSError:
        text = ""
    return text or "another build (it has not named itself yet)"


def describe_this_process():
    """'pid 42 on host since 2026-01-02 10:11:12: taot build spec.toml -o out': the command as typed.
    Started by the taot command, sys.argv is its command line (front_end.cpp sets it); otherwise the
    process's own (`python3 -m taot build ...`)."""
    if sys.argv and sys.argv[0] not in ("", "-c") and not sys.argv[0].endswith(".py"):
        command = shlex.join(sys.argv)
    else:
        try:
            arguments = Path("/proc/self/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            command = shlex.join(argument.decode(errors="replace") for argument in arguments)
        except OSError:
            command = shlex.join([sys.executable, *sys.argv])
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"pid {os.getpid()} on {socket.gethostname()} since {started}: {command}"
