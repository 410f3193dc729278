# Build manifest.json (schema in docs/manifest.md) from the spec, its variants and their artifacts.
import hashlib
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

from ..compile import artifacts
from ..errors import TaotError
from .. import triton_api
from ..triton_api import versions
from . import overrides
from ..spec.expressions import rule_program
from ..spec.model import DTYPE
from ..spec.targets import parse_target

from .built import SCHEMA, SCHEMA_VERSION


def relative(path, base):
    return Path(os.path.relpath(path, base)).as_posix()


LINE_WIDTH = 100


def render(manifest):
    """Sorted keys, two-space indent, trailing newline: the same manifest gives the same bytes. A
    value whose one-line form fits in LINE_WIDTH columns where it starts stays on one line (a grid
    instruction, a specialization entry, a list of numbers)."""
    return _render(manifest, 0, 0) + "\n"


def _render(value, depth, column):
    flat = json.dumps(value, sort_keys=True)
    if not isinstance(value, (dict, list)) or not value or column + len(flat) <= LINE_WIDTH:
        return flat
    inner = "  " * (depth + 1)
    if isinstance(value, list):
        items = [inner + _render(item, depth + 1, len(inner)) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * depth + "]"
    items = []
    for key in sorted(value):
        head = f"{inner}{json.dumps(key)}: "
        items.append(head + _render(value[key], depth + 1, len(head)))
    return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"


def build_manifest(library, outdir, variant_hashes, images=True):
    """The manifest dict; `variant_hashes` maps variant id -> hash of its target-independent inputs.
    Every image's artifacts must exist (the build only calls this after all jobs succeeded), unless
    `images` is false: then the variants have none (a plan, which `taot gen --plan` checks before
    anything compiles)."""
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "triton_version": triton_api.VERSION,
        "library": library.name,
        "spec": relative(library.path, outdir),
        "targets": [target.name for target in library.targets],
        "kernels": [_kernel(library, kernel, outdir, variant_hashes, images) for kernel in library.kernels],
    }


def _kernel(library, kernel, outdir, variant_hashes, images=True):
    variants = library.variants[kernel.name]
    entry = {
        "name": kernel.name,
        "function": kernel.function,
        "source": relative(kernel.source, outdir),
        "source_hash": hashlib.sha256(kernel.cache_key.encode()).hexdigest(),
        "targets": [target.name for target in kernel.targets],
        "grid": None if kernel.grid_text is None else list(kernel.grid_text),
        "args": [_arg(arg, variants) for arg in kernel.args],
        "config": [_config_field(field, variants) for field in kernel.config],
        "variants": [_variant(library, kernel, variant, outdir, variant_hashes[variant.id], images)
                     for variant in variants],
    }
    if kernel.parameter_names:  # a kernel imported from IR alone does not know them
        entry["parameters"] = list(kernel.parameter_names)
    if kernel.tuning_key:
        entry["tuning_key"] = list(kernel.tuning_key)
    if kernel.tuning:
        entry["tuning"] = [relative(path, outdir) for path in kernel.tuning]
    if kernel.autotune is not None:
        entry["autotune"] = {"at_first_call": kernel.autotune.at_first_call, "fields": list(kernel.autotune.fields),
                             "reset_to_zero": list(kernel.autotune.reset_to_zero),
                             "restore_value": list(kernel.autotune.restore_value)}
    entry.update(rule_entries(kernel))
    return entry


def rule_entries(kernel):
    """The kernel's "heuristics" and "requires" entries (those it has), each rule with its program."""
    scalars = [arg.name for arg in kernel.args if arg.rules.scalar]
    none_scalars = [arg.name for arg in kernel.args if arg.rules.scalar and arg.none]
    entries = {}
    if kernel.heuristics:
        entries["heuristics"] = [{"field": field, "expression": rule.text,
                                  "program": rule_program(rule, scalars, none_scalars)}
                                 for field, rule in kernel.heuristics]
    if kernel.requires:
        entries["requires"] = [{"expression": rule.text, "program": rule_program(rule, scalars, none_scalars)}
                               for rule in kernel.requires]
    return entries


def _used_types(arg, variants):
    """The argument's types that surviving variants use, in spec order."""
    used = {binding.type for variant in variants for binding in variant.bindings if binding.name == arg.name}
    return [choice for choice in arg.choices if choice in used]


def _arg(arg, variants):
    bindings = [binding for variant in variants for binding in variant.bindings if binding.name == arg.name]
    return arg.rules.manifest_arg(arg, _used_types(arg, variants), bindings)


def _config_field(field, variants):
    used = {_value_key(variant.config[field.name]) for variant in variants}
    values = [value for value in field.values if _value_key(value) in used]
    if field.kind != DTYPE:
        values.sort()
    entry = {"name": field.name, "kind": field.kind, "values": values, "default": field.default}
    if field.required:
        entry["required"] = True
    return entry


def _value_key(value):
    return (type(value).__name__, value)  # keeps True apart from 1


def _variant(library, kernel, variant, outdir, variant_hash, images=True):
    return {
        "id": variant.id,
        "hash": variant_hash,
        "specialization": [binding.rules.specialization(binding) for binding in variant.bindings],
        "config": dict(variant.config),
        "params": variant_params(variant),
        "grid": None if variant.grid is None else [list(program) for program in variant.grid],
        "images": [_image(outdir, variant, kernel.function, target) for target in kernel.targets
                   if target.name in variant.targets] if images else [],
    }


def variant_params(variant):
    """The call arguments the variant's kernel takes: not ==1 ints, None forms or launch-only ints."""
    return [binding.name for binding in variant.bindings
            if binding.hint != 1 and not binding.none and not binding.launch_only]


def artifact_dir(outdir, variant_id, target_name):
    return Path(outdir) / "artifacts" / variant_id / target_name


def image_entry(outdir, variant_id, function, target_name):
    """One image's entry as a build writes it, read from its folders: for commands that update one
    image of a written manifest (taot from-ir)."""
    target = parse_target(target_name)
    if target is None:
        raise TaotError(f"image {variant_id} for {target_name}: a target this taot does not build; build the library "
                        "again")
    return _image(outdir, SimpleNamespace(id=variant_id), function, target)


def ptxas_version(release_line):
    """ "12.8.93" from the ptxas release line inputs.json records ("Cuda compilation tools, release
    12.8, V12.8.93"); "12.8" when the line names the release alone; None when it names neither."""
    match = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", release_line or "") or \
        re.search(r"release (\d+\.\d+)", release_line or "")
    return match.group(1) if match else None


def _toolchain(compiled_record, variant_id, target_name):
    """The image's "triton_version", "ptxas_version" and "launch_abi" (docs/manifest.md), from the
    inputs its artifact folder was compiled from (the running Triton's when there is no record). An
    image rebuilt by taot from-ir is given its compiled image's: the rebuild must take the same
    parameters, and taot gen checks that its cubin does. TaotError naming the image when that Triton
    is not one taot supports."""
    inputs = (compiled_record or {}).get("inputs", {})
    triton_version = inputs.get("triton_version") or triton_api.VERSION
    release = versions.release_of(triton_version)
    if release is None:
        raise TaotError(f"image {variant_id} for {target_name} was compiled by Triton {triton_version}, which this "
                        f"taot does not support (Triton {versions.supported_range_text()}): build the library again "
                        f"(taot build compiles it with the Triton taot runs)")
    return {
        "triton_version": triton_version,
        "ptxas_version": ptxas_version(inputs.get("ptxas")),
        "launch_abi": {"tensordesc_layout": release.tensordesc_layout, "scratch_pointers": release.scratch_pointers},
    }


def _image(outdir, variant, function, target):
    folder = artifact_dir(outdir, variant.id, target.name)
    record = artifacts.read_record(folder)
    toolchain = _toolchain(record, variant.id, target.name)
    override = overrides.read(outdir, variant.id, target.name)  # rebuilt by taot from-ir: read from there
    if override is not None:
        record, folder = override.image_record(folder, record), override.folder
    metadata = json.loads((folder / record["metadata"]["file"]).read_text())
    cubin = (folder / record["cubin"]["file"]).read_bytes()
    num_ctas = metadata["num_ctas"]
    files = dict(record["ir"], metadata=record["metadata"]["file"])
    return {
        "target": target.name,
        "arch": target.capability or 0,  # AMD images: 0 (the target, their gfx name, selects them)
        "vendor": target.vendor,
        "warp_size": metadata.get("warp_size", target.warp_size),
        "arch_specific": record["ptx_target"].endswith("a"),
        "dir": relative(folder, outdir),
        "cubin": relative(folder / record["cubin"]["file"], outdir),
        "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
        "function_name": metadata["name"],
        "num_warps": metadata["num_warps"],
        "num_ctas": num_ctas,
        "num_stages": metadata["num_stages"],
        "shared": metadata["shared"],
        "global_scratch_size": metadata.get("global_scratch_size", 0),  # (Triton's AMD metadata has neither)
        "global_scratch_align": metadata.get("global_scratch_align", 1),
        "profile_scratch_size": metadata.get("profile_scratch_size", 0),
        "profile_scratch_align": metadata.get("profile_scratch_align", 1),
        "launch_cooperative_grid": metadata["launch_cooperative_grid"],
        "launch_pdl": metadata.get("launch_pdl", False),  # (NVIDIA's only)
        "cluster_dims": metadata.get("cluster_dims") or [num_ctas, 1, 1],
        "tmem_size": metadata.get("tmem_size", 0),
        "maxnreg": metadata.get("maxnreg"),
        "tensordesc_meta": metadata.get("tensordesc_meta") or [],
        **toolchain,
        "artifacts": {key: relative(folder / name, outdir) for key, name in files.items()},
        **({"ptxas": record["ptxas"]} if record.get("ptxas") else {}),  # what ptxas -v reported
        **({"override": override.manifest_entry(outdir)} if override is not None else {}),
    }
