# How a compile job's IR stages (ttir, ttgir, llir, then ptx or AMD's amdgcn) are kept: gzip-compressed (the default),
# plain text or not at all; and read_stage(), which reads a stage whichever way it was kept.
import gzip
import lzma
from pathlib import Path

from ..fsutil import write_atomically

IR_STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn")
COMPRESSED, PLAIN, NONE = "compressed", "plain", "none"
MODES = (COMPRESSED, PLAIN, NONE)
DEFAULT_MODE = COMPRESSED

_GZIP_LEVEL = 9  # IR files are small: level 9 costs ~0.1 ms each and is as small as xz here


def stage_file_name(function, stage, mode):
    """The file name stage `stage` of `function` is kept under in `mode` (None for NONE)."""
    if mode == NONE:
        return None
    name = f"{function}.{stage}"
    return name + ".gz" if mode == COMPRESSED else name


def encode(text, mode):
    data = text.encode()
    return gzip.compress(data, _GZIP_LEVEL, mtime=0) if mode == COMPRESSED else data


def write_stages(folder, function, texts, mode):
    """Write each stage's text (stage -> str) into `folder` as `mode` keeps it; returns stage -> file
    name of what was written ({} for NONE). A stage the compile did not produce is not written (a
    Gluon kernel's compile starts at ttgir: it has no ttir)."""
    written = {}
    for stage in IR_STAGES:
        name = stage_file_name(function, stage, mode)
        if name is not None and stage in texts:
            write_atomically(Path(folder) / name, encode(texts[stage], mode))
            written[stage] = name
    return written


def read_stage(path):
    """The text of an IR stage file: `x.ptx`, `x.ptx.gz` or `x.ptx.xz`. Given the plain name of a
    stage that was kept compressed, reads the compressed file beside it. OSError when absent."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    if path.suffix == ".xz":
        return lzma.decompress(path.read_bytes()).decode()
    if not path.exists():
        for suffix in (".gz", ".xz"):
            compressed = path.with_name(path.name + suffix)
            if compressed.exists():
                return read_stage(compressed)
    return path.read_text()
