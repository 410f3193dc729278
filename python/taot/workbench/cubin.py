# What a GPU image says about its kernels, read without cuobjdump or ROCm's tools: the target it was
# built for, each kernel's parameter sizes and the thread count it requires, enough to check that an
# image fits a launch. A cubin (a CUDA ELF file) keeps them in .nv.info.<kernel> (EIATTR_KPARAM_INFO,
# EIATTR_REQNTID), its target read as codegen/src/cubin.cpp reads it (both are tested on
# tests/unit/codegen/data/cubin_targets.json); an AMDGPU code object (Triton's .hsaco) in its
# NT_AMDGPU_METADATA note, MessagePack (amdhsa.kernels[].args[].size; amdhsa.target).
import re
import struct
from dataclasses import dataclass

from ..errors import Problem

EM_CUDA = 190
EM_AMDGPU = 224
_SECTION_NOTE = 7            # SHT_NOTE
_NOTE_AMDGPU_METADATA = 32   # NT_AMDGPU_METADATA, owner "AMDGPU"

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
    sm: int                       # e.g. 90; 0 for an AMD code object
    arch_specific: bool           # built for sm_90a rather than sm_90
    kernels: dict                 # name -> Kernel, for every kernel entry
    gfx: str = None               # an AMD code object's target, "gfx942"

    @property
    def target(self):
        return self.gfx or f"sm_{self.sm}{'a' if self.arch_specific else ''}"


def read(data):
    """The kernels of a cubin or an AMDGPU code object. Raises CubinError for anything but a 64-bit
    little-endian ELF of either."""
    data = bytes(data)
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise CubinError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file")
    machine, = struct.unpack_from("<H", data, 18)
    if machine == EM_AMDGPU:
        return _read_code_object(data)
    if machine != EM_CUDA:
        raise CubinError(f"an ELF file for machine {machine}, not CUDA ({EM_CUDA}) or AMDGPU ({EM_AMDGPU})")
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


def _read_code_object(data):
    """An AMDGPU code object's kernels and target, from its metadata note."""
    import msgpack
    notes = [body for name, kind, body in _sections(data, with_kind=True) if kind == _SECTION_NOTE]
    metadata = None
    for body in notes:
        for owner, kind, description in _notes(body):
            if owner == b"AMDGPU" and kind == _NOTE_AMDGPU_METADATA:
                try:
                    metadata = msgpack.unpackb(description, raw=False, strict_map_key=False)
                except (ValueError, msgpack.exceptions.ExtraData) as error:
                    raise CubinError(f"its AMDGPU metadata note is not MessagePack: {error}") from None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("amdhsa.kernels"), list):
        raise CubinError("an AMDGPU code object without the metadata note (NT_AMDGPU_METADATA) of its kernels")
    # "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" (Triton 3.6's LLVM), "amdgpu9.42-amd-amdhsa-unknown-gfx942" (3.9's)
    named = re.search(r"\b(gfx[0-9a-z]+)", str(metadata.get("amdhsa.target", "")))
    gfx = named.group(1) if named else None
    kernels = {}
    for kernel in metadata["amdhsa.kernels"]:
        arguments = sorted(kernel.get(".args", []), key=lambda argument: argument.get(".offset", 0))
        kernels[kernel[".name"]] = Kernel(kernel[".name"], tuple(argument[".size"] for argument in arguments), ())
    return Cubin(sm=0, arch_specific=False, kernels=kernels, gfx=gfx)


def _notes(body):
    """(owner, type, description) of each ELF note in a note section's bytes."""
    position = 0
    while position + 12 <= len(body):
        name_size, description_size, kind = struct.unpack_from("<III", body, position)
        position += 12
        owner = body[position:position + name_size].rstrip(b"\0")
        position += (name_size + 3) & ~3
        description = body[position:position + description_size]
        if len(description) != description_size:
            raise CubinError("a note runs past the end of its section")
        position += (description_size + 3) & ~3
        yield owner, kind, description


def _sections(data, with_kind=False):
    """(name, bytes) of each section; (name, type, bytes) `with_kind`."""
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
        yield (name, kind, body) if with_kind else (name, body)


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
