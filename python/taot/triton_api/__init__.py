# The one home of Triton's internals in taot: every private Triton API the front end uses (compile
# entry points, options and metadata, code generator hooks, pass managers and pass bindings, cache
# keys, the JIT's specialization, the bundled tools) is reached through this package, and what differs
# between Triton releases is a row of versions.RELEASES, not a branch elsewhere. Importing the package
# checks the installed Triton against the supported range (UnsupportedTriton, a TaotError, otherwise).
# The public language (triton.jit, triton.language, triton.Config) may be used anywhere.
import os
import sys

from ..errors import UnsupportedTriton
from . import versions


def _installed_release():
    try:
        import triton
    except ImportError as error:
        raise UnsupportedTriton(f"the Python taot runs ({sys.executable}) cannot import triton ({error}); "
                                f"install Triton {versions.supported_range_text()} there, or set TAOT_PYTHON "
                                f"to a Python that has it") from None
    release = versions.release_of(triton.__version__)
    if release is None:
        raise UnsupportedTriton(f"taot supports Triton {versions.supported_range_text()}; the Python it runs "
                                f"({sys.executable}) has Triton {triton.__version__}"
                                + ("" if os.environ.get("TAOT_PYTHON") else
                                   " (set TAOT_PYTHON to a Python with a supported Triton)"))
    return triton.__version__, release


VERSION, RELEASE = _installed_release()
