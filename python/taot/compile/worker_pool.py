# Worker processes and Ctrl-C: a terminal's Ctrl-C reaches the whole process group, so a child that
# is still starting would die mid-start (Python prints "Fatal Python error: init_import_site" and a
# traceback) or be left blocked where its parent waits for it. Children are therefore started with
# SIGINT ignored, and the parent, which alone takes Ctrl-C, ends them.
import contextlib
import signal
import threading


@contextlib.contextmanager
def children_ignore_ctrl_c():
    """While held, processes this one starts (spawn: fork and exec) inherit SIGINT ignored, and
    Python keeps it ignored in them; the parent's own handling is restored on exit. (A Ctrl-C in
    that short window is ignored by the parent too.) Only the main thread can change it: elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def end_workers(pool):
    """Drop a ProcessPoolExecutor's queued work and end its running processes now, without waiting
    for them to finish anything."""
    processes = list((pool._processes or {}).values())  # no public way before Python 3.14's terminate_workers
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()
