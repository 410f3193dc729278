# File writing that keeps builds incremental: atomic replacement, and no write when nothing changed.
import json
import os
import tempfile
from pathlib import Path


def _current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp creates files readable by their owner only; written files get the usual permissions instead.
FILE_MODE = 0o666 & ~_current_umask()


def canonical_json(value, indent=None):
    """Sorted keys, fixed separators: equal values give equal text."""
    separators = (",", ": ") if indent else (",", ":")
    return json.dumps(value, sort_keys=True, indent=indent, separators=separators)


def write_atomically(path, data):
    """Write bytes to a temporary file beside `path`, then rename it over `path`."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_if_changed(path, text):
    """Write `text` atomically unless the file already holds exactly it; True when it wrote."""
    path = Path(path)
    data = text.encode()
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    write_atomically(path, data)
    return True
