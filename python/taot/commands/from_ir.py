# `taot from-ir FILE --variant V -o LIBDIR`: rebuild one variant's image from an edited compile stage
# and put it where it runs: into the library (kept under LIBDIR/overrides/, manifest.json pointing at
# it, the library sources regenerated), into a Triton cache entry a JIT program loads
# (--triton-cache), or into Triton's override directory (--override-dir); `--drop` removes a
# library override. The work is done by taot.workbench.rebuild, taot.library.overrides and taot.workbench.cache_swap.
import json
import sys
from pathlib import Path

from ..cli import add_json_flag, add_no_wait_flag, json_document
from ..errors import TaotError


def add_arguments(parser):
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="the edited stage: a .ttir, .ttgir, .llir, .ptx or .cubin file, or for an AMD image .amdgcn or "
                             ".hsaco (or one of those .gz)")
    parser.add_argument("--variant", metavar="ID", help="the variant to rebuild (its id in LIBDIR/manifest.json)")
    parser.add_argument("-o", "--output", metavar="LIBDIR", help="the library folder taot build wrote")
    parser.add_argument("--target", metavar="TARGET",
                        help="which of the variant's images (e.g. sm_90, gfx942), when it has several")
    parser.add_argument("--drop", action="store_true",
                        help="remove the variant's override: the library runs the compiled kernel again")
    parser.add_argument("--triton-cache", metavar="DIR",
                        help="instead of the library, swap the rebuilt kernel into its entry in the Triton cache "
                             "DIR (TRITON_CACHE_DIR), where a JIT program loads it")
    parser.add_argument("--entry", metavar="KEY",
                        help="with --triton-cache: the entry to swap into (its folder name, or a unique prefix)")
    parser.add_argument("--override-dir", metavar="DIR",
                        help="instead of the library, write Triton's override files for the variant's source "
                             "into DIR (TRITON_OVERRIDE_DIR)")
    parser.add_argument("--tuning", action="append", default=[], metavar="[KERNEL=]FILE",
                        help="a tuned table `taot build --tuning` baked in (repeatable): the manifest does not "
                             "name those, so regenerating the library needs them again")
    add_no_wait_flag(parser, "LIBDIR")
    add_json_flag(parser, "the result")
    parser.add_argument("-q", "--quiet", action="store_true", help="no report on stderr")


def check(parser, arguments):
    """Usage errors the parser cannot see alone (exit 2)."""
    if arguments.triton_cache and arguments.override_dir:
        parser.error("--triton-cache and --override-dir are two places to put the kernel: give one")
    elsewhere = arguments.triton_cache or arguments.override_dir
    if arguments.drop:
        if arguments.file:
            parser.error("--drop takes no FILE: it removes the override of --variant in -o LIBDIR")
        if elsewhere:
            parser.error("--drop removes a library override; for a Triton cache entry, delete its folder")
    elif not arguments.file:
        parser.error("FILE is required: the edited .ttir, .ttgir, .llir, .ptx, .cubin, .amdgcn or .hsaco (or --drop)")
    if arguments.entry and not arguments.triton_cache:
        parser.error("--entry picks a Triton cache entry: give --triton-cache DIR too")
    if arguments.triton_cache:
        if bool(arguments.variant) != bool(arguments.output):
            parser.error("--variant and -o LIBDIR go together (with --triton-cache both may be left out)")
    elif not (arguments.variant and arguments.output):
        parser.error("--variant ID and -o LIBDIR are required (the library and the variant to rebuild)")
    if arguments.tuning and elsewhere:
        parser.error("--tuning is for regenerating the library, which --triton-cache and --override-dir leave alone")


def run(arguments):
    quiet = arguments.quiet or arguments.json
    say = (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    if not (arguments.triton_cache or arguments.override_dir):
        from .build import taot_binary
        taot_binary()  # the library is regenerated: a missing `taot` is said before anything changes
    if arguments.drop:
        result = _drop(arguments, say)
    elif arguments.triton_cache:
        result = _into_cache(arguments, say)
    elif arguments.override_dir:
        result = _into_override_dir(arguments, say)
    else:
        result = _into_library(arguments, say)
    if arguments.json:
        print(json.dumps(json_document("from-ir", result), indent=2, sort_keys=True))
    return result.get("gen_status", 0)


# ---- the library ----

def _into_library(arguments, say):
    from ..library import overrides
    from ..compile.output_lock import OutputLock
    outdir = Path(arguments.output)
    with OutputLock(outdir, wait=not arguments.no_wait, notice=say):
        located = _locate(outdir, arguments)
        reference = overrides.reference(outdir, located)
        rebuilt = _rebuild(arguments.file, reference, say)
        _, compiled = overrides.compiled_folder(outdir, located)
        override = overrides.write(outdir, located.variant_id, located.target, located.kernel["function"], rebuilt,
                                   compiled["cubin"]["sha256"])
        manifest_changed = overrides.refresh_manifest(outdir, located)
        result = _describe(rebuilt, reference, located.label)
        folder = override.folder
        result.update(variant=located.variant_id, target=located.target, folder=str(folder),
                      manifest=str(outdir / overrides.MANIFEST), manifest_changed=manifest_changed)
        say(f"  kept in {folder} ({rebuilt.stage} sha256 {rebuilt.sha256[:16]}...); "
            f"{overrides.MANIFEST} {'updated' if manifest_changed else 'unchanged'}")
        result["gen_status"] = _regenerate(outdir, arguments, say)
    return result


def _drop(arguments, say):
    from ..library import overrides
    from ..compile.output_lock import OutputLock
    outdir = Path(arguments.output)
    with OutputLock(outdir, wait=not arguments.no_wait, notice=say):
        targets = [target for variant, target in overrides.listed(outdir) if variant == arguments.variant]
        try:
            located = overrides.locate(outdir, arguments.variant, arguments.target)
        except TaotError:
            if arguments.target is None and len(targets) == 1 and _manifest_has_variant(outdir, arguments.variant):
                # the variant has images for several targets and one override: drop that one
                located = overrides.locate(outdir, arguments.variant, targets[0])
            elif _manifest_has_variant(outdir, arguments.variant):
                raise
            elif arguments.target in targets or (arguments.target is None and len(targets) == 1):
                # the spec no longer has the variant: its override folder can still go
                stage = overrides.drop(outdir, arguments.variant, arguments.target or targets[0])
                say(f"dropped the {stage} override of {arguments.variant} (the manifest has no such variant)")
                return {"variant": arguments.variant, "dropped": stage}
            else:
                raise
        stage = overrides.drop(outdir, located.variant_id, located.target)
        if stage is None and "override" in located.image:  # its folder went away: repair the manifest
            stage = located.image["override"].get("stage", "unknown")
            say(f"{located.label}: the manifest names a {stage} override whose folder is gone; restoring the "
                "compiled kernel")
        if stage is None:
            raise TaotError(f"{located.label} has no override in {outdir} (taot from-ir makes one)")
        manifest_changed = overrides.refresh_manifest(outdir, located)
        _, compiled = overrides.compiled_folder(outdir, located)
        say(f"dropped the {stage} override of {located.label}: the library runs the compiled kernel again "
            f"(cubin sha256 {compiled['cubin']['sha256'][:16]}...)")
        result = {"variant": located.variant_id, "target": located.target, "dropped": stage,
                  "cubin_sha256": compiled["cubin"]["sha256"], "manifest_changed": manifest_changed}
        result["gen_status"] = _regenerate(outdir, arguments, say)
    return result


def _locate(outdir, arguments):
    """The image of --variant (and --target) in the library; when the variant has images for several
    targets and no --target is given, the one the edited file names itself (a .ttgir's ttg.target, a
    .ptx's .target, an .llir's target-cpu, a cubin's ELF)."""
    from ..library import overrides
    from ..workbench import rebuild
    try:
        return overrides.locate(outdir, arguments.variant, arguments.target)
    except TaotError:
        named = None if arguments.target else rebuild.target_named_in(arguments.file)
        if named is None:
            raise
        return overrides.locate(outdir, arguments.variant, named)


def _manifest_has_variant(outdir, variant_id):
    from ..library import overrides
    try:
        manifest = overrides.load_manifest(outdir)
    except TaotError:
        return False
    return any(variant.get("id") == variant_id for kernel in manifest.get("kernels", [])
               for variant in kernel.get("variants", []))


def _regenerate(outdir, arguments, say):
    """`taot gen` into LIBDIR, with --python when the folder has the library's Python module."""
    from ..library import overrides
    from .build import run_gen
    library = overrides.load_manifest(outdir)["library"]
    python = (outdir / f"{library}_python.cpp").exists()
    say(f"taot gen {outdir / overrides.MANIFEST} -> {outdir}")
    try:
        return run_gen(outdir / overrides.MANIFEST, outdir, python=python, quiet=arguments.quiet or arguments.json,
                       tuning=arguments.tuning)
    except KeyboardInterrupt:  # the manifest is written; the sources are not all regenerated from it
        command = f"taot gen {outdir / overrides.MANIFEST} -o {outdir}" + (" --python" if python else "")
        raise KeyboardInterrupt(f"{overrides.MANIFEST} has the change, the generated sources may not: run "
                                f"{command}") from None


# ---- a JIT program's Triton ----

def _into_cache(arguments, say):
    from ..workbench import cache_swap, rebuild
    from ..library import overrides
    variant_reference = None
    if arguments.variant:
        located = _locate(Path(arguments.output), arguments)
        variant_reference = overrides.reference(Path(arguments.output), located)
        name = variant_reference.metadata.get("name")
    else:
        name = rebuild.kernel_name(arguments.file)
        if name is None and arguments.entry is None:
            raise TaotError(f"{arguments.file}: cannot tell which kernel it defines; pick the entry with --entry KEY")
    entry = cache_swap.find_entry(arguments.triton_cache, name, variant_reference, arguments.entry)
    reference = cache_swap.entry_reference(entry)
    rebuilt = _rebuild(arguments.file, reference, say)
    written = cache_swap.swap_into_entry(entry, rebuilt)
    say(f"  swapped into {entry.folder}: {', '.join(written)}; a JIT program using TRITON_CACHE_DIR="
        f"{arguments.triton_cache} loads it on its next cache hit (delete the folder for Triton's own compile)")
    result = _describe(rebuilt, reference, reference.label)
    result.update(entry=entry.key, folder=str(entry.folder), written=written)
    return result


def _into_override_dir(arguments, say):
    from ..workbench import cache_swap
    from ..library import overrides
    outdir = Path(arguments.output)
    located = _locate(outdir, arguments)
    reference = overrides.reference(outdir, located)
    key, file_name = cache_swap.source_key(outdir, located)
    rebuilt = _rebuild(arguments.file, reference, say)
    folder = cache_swap.write_override(arguments.override_dir, key, file_name, rebuilt)
    environment = {"TRITON_KERNEL_OVERRIDE": "1", "TRITON_OVERRIDE_DIR": str(Path(arguments.override_dir).resolve()),
                   "TRITON_ALWAYS_COMPILE": "1"}
    say(f"  wrote {folder}")
    say("  a JIT program picks it up with " + " ".join(f"{name}={value}" for name, value in environment.items())
        + " (Triton's cache key does not cover overrides: without TRITON_ALWAYS_COMPILE, a cached compile wins)")
    for key_name in ("num_warps", "num_ctas"):
        if rebuilt.metadata.get(key_name) != reference.metadata.get(key_name):
            say(f"  warning: Triton launches with the call's {key_name}, and the rebuilt kernel needs "
                f"{rebuilt.metadata.get(key_name)} (the variant has {reference.metadata.get(key_name)}): pass "
                f"{key_name}={rebuilt.metadata.get(key_name)} in the call")
    result = _describe(rebuilt, reference, located.label)
    result.update(folder=str(folder), source_hash=key, environment=environment)
    return result


# ---- shared ----

def _rebuild(path, reference, say):
    """Rebuild and check the signature, reporting what happened."""
    from ..workbench import rebuild
    rebuilt = rebuild.rebuild(path, reference)
    if rebuilt.output.strip():
        sys.stderr.write(rebuilt.output)
    rebuild.check_signature(rebuilt, reference)
    later = [stage for stage in rebuild.STAGES[rebuild.STAGES.index(rebuilt.stage) + 1:]
             if stage in rebuilt.stages or stage == rebuilt.image_stage]
    steps = f"rebuilt {', '.join(later)} in {rebuilt.seconds:.1f}s" if later else "taken as it is"
    say(f"from-ir: {path} ({rebuilt.stage}) for {reference.label}: {steps}; its parameters match")
    changes = rebuild.changes(rebuilt, reference)
    say(f"  changed: {'; '.join(changes)}" if changes else "  launch metadata unchanged")
    if rebuilt.carried:
        say(f"  carried from the kernel it replaces (the stages after {rebuilt.stage} do not compute them): "
            + ", ".join(f"{key} {json.dumps(rebuilt.metadata.get(key))}" for key in rebuilt.carried))
    return rebuilt


def _describe(rebuilt, reference, label):
    """The result's facts for --json."""
    import hashlib

    from ..workbench import rebuild
    return {"replaces": label, "stage": rebuilt.stage, "file": str(rebuilt.path), "sha256": rebuilt.sha256,
            "cubin_sha256": hashlib.sha256(rebuilt.cubin).hexdigest(), "num_warps": rebuilt.metadata.get("num_warps"),
            "shared": rebuilt.metadata.get("shared"), "changes": rebuild.changes(rebuilt, reference),
            "carried": list(rebuilt.carried), "ptxas": rebuilt.ptxas}
