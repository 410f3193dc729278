# Put a rebuilt kernel where Triton's JIT picks it up, two ways:
# - in place of a cache entry's kernel (TRITON_CACHE_DIR/<key>/): on a cache hit Triton's
#   CompiledKernel loads the metadata `<name>.json` and every file `__grp__<name>.json` lists, and
#   launches the cubin with that metadata, so the rebuilt stages, cubin and launch metadata replace
#   the entry's files (same names, the group rewritten last);
# - into Triton's override directory (TRITON_OVERRIDE_DIR/<base32 of the source's hash>/<name>.<stage>),
#   whose files replace those stages' outputs in any compile of that source while
#   TRITON_KERNEL_OVERRIDE=1; the source's hash is the one Triton's JIT computes for a call that
#   specializes as the variant does.
import base64
import hashlib
import json
import re
from pathlib import Path

from . import triton_cache
from ..errors import TaotError
from ..fsutil import write_atomically
from ..spec.targets import arch_name, parse_target
from ..triton_api import jit as triton_jit
from .rebuild import KERNEL_KEYS, Reference

MARKER = "taot-from-ir.json"   # left in a swapped entry (not in its group): what replaced the kernel


def find_entry(cache_dir, name, variant_reference=None, entry_key=None):
    """The entry of kernel `name` in the Triton cache at `cache_dir` to swap a rebuild into.
    `entry_key` (a cache key, a unique prefix of one, or the entry's path) picks it outright;
    otherwise, with `variant_reference` (the compiled variant the rebuild was made for), the one entry
    for its architecture and parameters that was compiled from the variant's TTIR (the JIT call
    specialized as the variant); without, the only entry of that kernel. TaotError listing the
    candidates when none or several fit."""
    try:
        contents = triton_cache.read_cache(cache_dir)
    except triton_cache.CacheProblem as problem:
        raise TaotError(str(problem)) from None
    usable = [entry for entry in contents.entries if entry.metadata and entry.image in entry.files]
    if entry_key is not None:
        return _by_key(cache_dir, usable, entry_key, name)
    named = [entry for entry in usable if name is None or _kernel_name(entry) == name]
    if not named:
        names = sorted({_kernel_name(entry) for entry in usable})
        raise TaotError(f"{cache_dir}: no cache entry of kernel {name} (its kernels: {', '.join(names) or 'none'}); "
                        f"run the JIT program with TRITON_CACHE_DIR={cache_dir} first")
    if variant_reference is None:
        if len(named) == 1:
            return named[0]
        raise TaotError(f"{cache_dir}: {len(named)} entries of kernel {name}; pick one with --entry KEY "
                        f"(or give --variant and -o so the variant picks it):\n{_listing(named)}")
    fitting = [entry for entry in named if _fits(entry, variant_reference)]
    if not fitting:
        raise TaotError(f"{cache_dir}: no entry of kernel {name} was compiled for {arch_name(variant_reference.arch)} "
                        f"with the parameters of {variant_reference.label}; entries of {name}:\n{_listing(named)}")
    reference_ttir = variant_reference.stages.get("ttir")
    same = [entry for entry in fitting if reference_ttir is not None and "ttir" in entry.files
            and without_locations(entry.text("ttir")) == without_locations(reference_ttir)]
    if len(same) == 1:
        return same[0]
    why = (f"{len(same)} were compiled from the TTIR of {variant_reference.label}" if same else
           f"none was compiled from the TTIR of {variant_reference.label} (the JIT call specialized differently: "
           f"dtypes, 16-divisibility, ints equal to 1, constexpr values)")
    raise TaotError(f"{cache_dir}: {len(fitting)} entries of kernel {name} take its parameters, and {why}; "
                    f"pick one with --entry KEY:\n{_listing(fitting, reference_ttir)}")


def _by_key(cache_dir, entries, key, name):
    key = str(key).rstrip("/")
    chosen = [entry for entry in entries
              if entry.key.startswith(key) or str(entry.folder) == key or str(entry.folder.resolve()) == key]
    if name is not None and len(chosen) > 1:
        chosen = [entry for entry in chosen if _kernel_name(entry) == name]
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise TaotError(f"{cache_dir}: no kernel entry {key}; its entries:\n{_listing(entries)}")
    raise TaotError(f"{cache_dir}: {len(chosen)} entries start with {key}:\n{_listing(chosen)}")


def _kernel_name(entry):
    return entry.metadata.get("name", entry.name)


def _fits(entry, reference):
    from . import cubin as cubin_reader
    if entry.arch != reference.arch:
        return False
    try:
        ours = cubin_reader.read(entry.files[entry.image].read_bytes()).kernels.get(_kernel_name(entry))
        theirs = cubin_reader.read(reference.cubin).kernels.get(reference.metadata.get("name"))
    except (OSError, cubin_reader.CubinError):
        return False
    return ours is not None and theirs is not None and ours.parameter_sizes == theirs.parameter_sizes


def _listing(entries, reference_ttir=None):
    lines = []
    for entry in entries:
        metadata = entry.metadata
        facts = f"{arch_name(metadata['target']['arch'])}, num_warps {metadata.get('num_warps')}, num_stages " \
                f"{metadata.get('num_stages')}, shared {metadata.get('shared')}"
        if reference_ttir is not None and "ttir" in entry.files:
            same = without_locations(entry.text("ttir")) == without_locations(reference_ttir)
            facts += ", same TTIR as the variant" if same else ", other TTIR"
        if (entry.folder / MARKER).exists():
            facts += ", swapped by taot from-ir"
        lines.append(f"  {entry.key}  {_kernel_name(entry)}: {facts}")
    return "\n".join(lines)


_LOCATION = re.compile(r'\s*loc\((?:[^()"]|"(?:[^"\\]|\\.)*"|\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))*\)')


def without_locations(text):
    """MLIR text without its source locations (`loc(...)` and the `#loc` definitions), which name
    the Python file as the compiling process saw it."""
    lines = [line for line in text.splitlines() if not line.startswith("#loc")]
    return "\n".join(_LOCATION.sub("", line).rstrip() for line in lines)


def entry_reference(entry):
    """The kernel a cache entry holds, as what a rebuild swapped into it must fit."""
    stages = {stage: entry.text(stage) for stage in entry.ir_stages if stage in entry.files
              and entry.files[stage].is_file()}
    names = tuple(parameter.name for parameter in entry.parameters)
    names = names + ("global_scratch", "profile_scratch") if names else ()
    return Reference(label=f"Triton cache entry {entry.key}", arch=entry.arch, metadata=entry.metadata,
                     cubin=entry.files[entry.image].read_bytes(), stages=stages, parameter_names=names)


def swap_into_entry(entry, rebuilt):
    """Replace the entry's kernel with the rebuilt one: the IR stages from the edited one on, the
    cubin, the metadata's kernel keys (the entry's hash, target and options stay), then the group
    file naming them all. Returns the file names written."""
    folder = entry.folder.resolve()
    group_path = folder / f"{triton_cache.GROUP_PREFIX}{entry.name}.json"
    try:
        children = json.loads(group_path.read_text())["child_paths"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TaotError(f"{group_path}: cannot read Triton's group file ({error})") from None
    replaced = _sha256(entry.files[entry.image].read_bytes())
    written = []

    def put(file_name, data):
        write_atomically(folder / file_name, data)
        children[file_name] = str(folder / file_name)
        written.append(file_name)

    for stage, text in rebuilt.stages.items():
        put(f"{entry.name}.{stage}", text.encode())
    put(f"{entry.name}.{entry.image}", rebuilt.cubin)
    metadata = dict(entry.metadata)
    metadata.update({key: rebuilt.metadata[key] for key in KERNEL_KEYS if key in rebuilt.metadata})
    put(f"{entry.name}.json", json.dumps(metadata).encode())
    write_atomically(folder / MARKER, (json.dumps({
        "stage": rebuilt.stage, "sha256": rebuilt.sha256, "edited": str(Path(rebuilt.path).resolve()),
        "replaced_cubin_sha256": replaced,
    }, indent=2, sort_keys=True) + "\n").encode())
    write_atomically(group_path, json.dumps({"child_paths": children}).encode())
    return written


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---- Triton's override directory ----

def source_key(outdir, located):
    """(hash, file name): the hash Triton's JIT gives the source of a call that specializes as the
    variant does (ASTSource.hash(): the function's cache key, the signature, the constexprs and the
    attrs), which keys the override and dump directories, and the name its files have there. Found by
    running Triton's own argument binder on stand-in arguments built from the variant's specialization."""
    from ..spec.source import load_function

    kernel, variant = located.kernel, located.variant
    function = load_function(Path(outdir) / kernel["source"], kernel["function"])
    specialization = triton_jit.specialize(function, parse_target(located.image["target"]).arch,
                                           _stand_in_arguments(kernel, variant, function))
    return triton_jit.source_hash(function, specialization), triton_jit.compiled_file_name(function)


def _stand_in_arguments(kernel, variant, function):
    """Parameter name -> an argument the JIT's binder specializes as the variant's specialization
    says (constexprs and arguments compiled as constants take their values)."""
    from ..spec.dtypes import triton_dtype
    dtype_fields = {field["name"] for field in kernel.get("config", []) if field.get("kind") == "dtype"}
    names = [param.name for param in triton_jit.parameters(function)]
    values = {}
    for entry in variant["specialization"]:
        name = entry["arg"]
        if name not in names:
            continue  # a launch-only argument
        if "block" in entry:
            raise TaotError(f"{name} is a tensor descriptor, which taot cannot stand in for to find the key "
                            f"Triton's JIT gives this source; swap into a cache entry with --triton-cache instead")
        if "dtype" in entry:
            values[name] = None if entry.get("none") else triton_jit.stand_in("*" + entry["dtype"],
                                                                              entry.get("align") == 16)
        elif entry["type"] in ("i32", "i64") and entry.get("hint") == 1:
            values[name] = 1
        else:
            values[name] = triton_jit.stand_in(entry["type"], entry.get("hint") == 16)
    for name, value in variant.get("config", {}).items():
        if name in names and name not in values:
            values[name] = triton_dtype(value) if name in dtype_fields else value
    return values


def override_folder(directory, key):
    """Triton's override folder for a source hash: the base32 of its bytes, unpadded
    (triton/runtime/cache.py)."""
    return Path(directory) / base64.b32encode(bytes.fromhex(key)).decode().rstrip("=")


def write_override(directory, key, file_name, rebuilt):
    """Write the edited stage and every stage rebuilt after it (the cubin included) as Triton's
    override files of the source with hash `key`; returns the folder."""
    folder = override_folder(directory, key)
    folder.mkdir(parents=True, exist_ok=True)
    files = dict(rebuilt.stages)
    if rebuilt.stage != rebuilt.image_stage:
        files[rebuilt.stage] = rebuilt.data.decode()
    for stage, text in files.items():
        write_atomically(folder / f"{file_name}.{stage}", text.encode())
    write_atomically(folder / f"{file_name}.{rebuilt.image_stage}", rebuilt.cubin)
    return folder
