# What a cubin (a CUDA ELF file) says about its kernels, read without cuobjdump: the target it was
# built for, each kernel's parameter sizes (.nv.info.<kernel>: EIATTR_KPARAM_INFO) and the thread
# count it requires (EIATTR_REQNTID), enough to check that a cubin fits a launch. The target is read
# as codegen/src/cubin.cpp reads it; both are tested on tests/unit/codegen/data/cubin_targets.json.
import struct
from dataclasses import dataclass

from ..errors import Problem

EM_CUDA = 190

# .nv.info attribute records: a format byte, an attribute byte, then by format: nothing, one byte,
# a 16-bit value (each padded to 4 bytes in all), or a 16-bit size and that many bytes.
_FORMAT_NVAL, _FORMAT_BVAL, _FORMAT_HVAL, _FORMAT_SVAL = 0x01, 0x02, 0x03, 0x04
_KPARAM_INFO = 0x17
_REQNTID = 0x10
_COMPAT_ACCELERATOR_TARGET = 0x09  # in .nv.compat: EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET


class CubinError(Problem):
    """The bytes are not a cubin this reader understands; the message says what is wrong."""


@dataclass(frozen=True)
class Kernel:
    name: str
    parameter_sizes: tuple        # bytes of each parameter, in parameter order
    required_threads: tuple       # (x, y, z) from .reqntid, or () when the kernel requires none


@dataclass(frozen=True)
class Cubin:
    sm: int                       # e.g. 90
    arch_specific: bool           # built for sm_90a rather than sm_90
    kernels: dict                 # name -> Kernel, for every kernel entry

    @property
    def target(self):
        return f"sm_{self.sm}{'a' if self.arch_specific else ''}"


def read(data):
    """The kernels of a cubin. Raises CubinError for anything but a 64-bit little-endian CUDA ELF."""
    data = bytes(data)
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise CubinError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file")
    machine, = struct.unpack_from("<H", data, 18)
    if machine != EM_CUDA:
        raise CubinError(f"an ELF file for machine {machine}, not CUDA ({EM_CUDA})")
    abi_version, flags = data[8], struct.unpack_from("<I", data, 48)[0]
    sm, arch_specific = _arch(abi_version, flags)
    kernels = {}
    for name, body in _sections(data):
        if name.startswith(".nv.info."):
            kernel = _kernel(name[len(".nv.info."):], body)
            if kernel is not None:
                kernels[kernel.name] = kernel
        elif name == ".nv.compat":
            arch_specific = arch_specific or _compat_says_arch_specific(body)
    return Cubin(sm=sm, arch_specific=arch_specific, kernels=kernels)


def _arch(abi_version, flags):
    """(sm, arch-specific) from e_flags: ELF ABI version 7 and before keep the sm in bits 0-7 and
    the "a" in bit 11; version 8 keeps the sm in bits 8-15, and ptxas 12.8-12.9 the "a" in bit 3.
    ptxas 13 writes version 8 for every sm and keeps the "a" in .nv.compat only."""
    if abi_version >= 8:
        return (flags >> 8) & 0xFF, bool(flags & 0x8)
    return flags & 0xFF, bool(flags & 0x800)


def _compat_says_arch_specific(body):
    """Whether .nv.compat (records shaped as .nv.info's) sets CUDA_ACCELERATOR_TARGET."""
    position = 0
    while position + 4 <= len(body):
        kind, attribute = body[position], body[position + 1]
        if kind == _FORMAT_BVAL and attribute == _COMPAT_ACCELERATOR_TARGET and body[position + 2]:
            return True
        position += 4 + (struct.unpack_from("<H", body, position + 2)[0] if kind == _FORMAT_SVAL else 0)
    return False


def _sections(data):
    """(name, bytes) of each section."""
    section_offset, = struct.unpack_from("<Q", data, 40)
    entry_size, count, names_index = struct.unpack_from("<HHH", data, 58)
    if entry_size < 64 or section_offset + entry_size * count > len(data) or names_index >= count:
        raise CubinError("its section headers lie outside the file")
    headers = [struct.unpack_from("<IIQQQQ", data, section_offset + index * entry_size) for index in range(count)]
    names_at, names_size = headers[names_index][4], headers[names_index][5]
    names = data[names_at:names_at + names_size]
    for name_offset, kind, _, _, offset, size in headers:
        end = names.find(b"\0", name_offset)
        name = names[name_offset:end if end >= 0 else len(names)].decode(errors="replace")
        if kind != 8 and offset + size > len(data):  # SHT_NOBITS holds no bytes
            raise CubinError(f"section {name} runs past the end of the file ({len(data)} bytes)")
        body = b"" if kind == 8 else data[offset:offset + size]
        yield name, body


def _kernel(name, body):
    """The kernel an .nv.info.<name> section describes, or None when it has no parameter records
    (a device function). Triton's kernels always have some: the two scratch pointers."""
    parameters = {}
    required = ()
    position = 0
    while position + 4 <= len(body):
        kind, attribute = body[position], body[position + 1]
        if kind == _FORMAT_SVAL:
            size, = struct.unpack_from("<H", body, position + 2)
            value = body[position + 4:position + 4 + size]
            position += 4 + size
        elif kind in (_FORMAT_NVAL, _FORMAT_BVAL, _FORMAT_HVAL):
            value = body[position + 2:position + 4]
            position += 4
        else:
            raise CubinError(f"section .nv.info.{name} has a record of unknown format {kind}")
        if attribute == _KPARAM_INFO and kind == _FORMAT_SVAL and len(value) >= 12:
            _, ordinal, _, packed = struct.unpack_from("<IHHI", value)
            parameters[ordinal] = (packed >> 18) & 0x3FFF
        elif attribute == _REQNTID and kind == _FORMAT_SVAL and len(value) >= 12:
            required = struct.unpack_from("<III", value)
    if not parameters:
        return None
    if sorted(parameters) != list(range(len(parameters))):
        raise CubinError(f"kernel {name}'s parameter records skip an ordinal")
    return Kernel(name, tuple(parameters[ordinal] for ordinal in range(len(parameters))), required)
