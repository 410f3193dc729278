# Worker processes and Ctrl-C: a terminal's Ctrl-C reaches the whole process group, so a child that
# is still starting would die mid-start (Python prints "Fatal Python error: init_import_site" and a
# traceback) or be left blocked where its parent waits for it. Children are therefore started with
# SIGINT blocked (a process's signal mask survives fork and exec; Python never unblocks it), and the
# parent, which alone takes Ctrl-C, ends them.
import contextlib
import signal


@contextlib.contextmanager
def children_ignore_ctrl_c():
    """While held, this thread blocks SIGINT, so that the processes it starts (spawn: fork and exec)
    start with it blocked and never see a Ctrl-C; on exit the thread's mask is restored and a Ctrl-C
    that came meanwhile is delivered then (a KeyboardInterrupt where the block ends), not lost."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def end_workers(pool):
    """Drop a ProcessPoolExecutor's queued work and end its running processes now, without waiting
    for them to finish anything."""
    processes = list((pool._processes or {}).values())  # no public way before Python 3.14's terminate_workers
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
