# What a cluster node is asked before it is given compile jobs (compile/cluster.py). Kept apart, with
# nothing imported at the top, so that a node whose Triton taot does not support can still answer.
import socket


def probe():
    """Runs on a node: (its host name, its Triton version or None when it has none)."""
    try:
        import triton
        version = triton.__version__
    except ImportError:
        version = None
    return socket.gethostname(), version
