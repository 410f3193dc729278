# Overrides kept in a library folder. An image `taot from-ir` rebuilt from an edited stage lives in
# OUTDIR/overrides/<variant>/<target>/: the edited file, the IR stages rebuilt after it, the cubin,
# metadata.json and override.json, the record (written last). While the folder is there,
# manifest.json's image is read from it (manifest._image asks `read`), so `taot build` keeps it
# until `taot from-ir --drop` removes it. Also here: finding an image in a written manifest, the
# compiled kernel a rebuild must fit, and rewriting one image of a written manifest.
import difflib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..compile import artifacts, ir_files
from .built import MANIFEST, read_manifest
from ..errors import OverrideDamaged, TaotError
from ..fsutil import write_atomically, write_if_changed
from ..workbench.rebuild import STAGES, Reference
from ..spec.targets import parse_target

ROOT = "overrides"
RECORD = "override.json"
RECORD_FORMAT = 1


@dataclass(frozen=True)
class Override:
    folder: Path
    record: dict

    @property
    def stage(self):
        return self.record["stage"]

    def image_record(self, compiled_folder, compiled_record):
        """The image's record in the shape of an artifact folder's (artifacts.read_record), file
        names relative to this folder: the override's cubin, metadata and stages, the compiled
        stages before the edited one (the history the edit started from) and ptxas' report of the
        rebuilt cubin (None when ptxas did not run: rebuilt from a .cubin)."""
        before = STAGES.index(self.stage)
        ir = {stage: os.path.relpath(Path(compiled_folder) / name, self.folder)
              for stage, name in (compiled_record or {}).get("ir", {}).items() if STAGES.index(stage) < before}
        ir.update(self.record["ir"])
        ptx_target = self.record["ptx_target"] or (compiled_record or {}).get("ptx_target", "")
        return {"cubin": self.record["cubin"], "metadata": self.record["metadata"], "ir": ir,
                "ptx_target": ptx_target, "ptxas": self.record.get("ptxas")}

    def manifest_entry(self, outdir):
        """The image's "override" value: {"stage", "sha256", "file"} (docs/manifest.md)."""
        return {"stage": self.stage, "sha256": self.record["sha256"],
                "file": Path(os.path.relpath(self.folder / self.record["file"], outdir)).as_posix()}


def folder(outdir, variant_id, target_name):
    return Path(outdir) / ROOT / variant_id / target_name


def read(outdir, variant_id, target_name):
    """The override of an image, or None when it has none. OverrideDamaged when the folder's
    files no longer match its record (the manifest must not point at them)."""
    where = folder(outdir, variant_id, target_name)
    try:
        record = json.loads((where / RECORD).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise _damaged(outdir, variant_id, target_name, f"{RECORD} cannot be read ({error})") from None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise _damaged(outdir, variant_id, target_name, f"{RECORD} is not a record this taot writes "
                                                        f"(format {RECORD_FORMAT})")
    try:
        cubin = (where / record["cubin"]["file"]).read_bytes()
        if _sha256(cubin) != record["cubin"]["sha256"]:
            raise _damaged(outdir, variant_id, target_name, "the cubin changed since taot from-ir wrote it")
        metadata = (where / record["metadata"]["file"]).read_bytes()
        if _sha256(metadata) != record["metadata"]["sha256"]:
            raise _damaged(outdir, variant_id, target_name, "metadata.json changed since taot from-ir wrote it")
        if _sha256((where / record["file"]).read_bytes()) != record["sha256"]:
            raise _damaged(outdir, variant_id, target_name, f"{record['file']}, the edited file it was rebuilt "
                                                            "from, changed since (run taot from-ir on it again)")
    except OSError as error:
        raise _damaged(outdir, variant_id, target_name, f"{Path(error.filename).name} is missing") from None
    except (KeyError, TypeError):
        raise _damaged(outdir, variant_id, target_name, f"{RECORD} is damaged") from None
    return Override(where, record)


def _damaged(outdir, variant_id, target_name, why):
    return OverrideDamaged(f"{folder(outdir, variant_id, target_name)}: {why}; rebuild it with taot from-ir, "
                           f"or drop it: {drop_command(outdir, variant_id, target_name)}")


def drop_command(outdir, variant_id, target_name):
    return f"taot from-ir --drop --variant {variant_id} --target {target_name} -o {outdir}"


def write(outdir, variant_id, target_name, function, rebuilt, replaced_cubin_sha256):
    """Keep a rebuilt kernel as the override of an image, replacing any earlier one: the edited file
    as `<function>.<stage>`, the stages rebuilt after it, the cubin, metadata.json, then the record.
    Written beside the folder and moved into place, so a failure leaves the earlier state."""
    where = folder(outdir, variant_id, target_name)
    where.parent.mkdir(parents=True, exist_ok=True)
    staging = where.with_name(f".{target_name}.new-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    edited = f"{function}.{rebuilt.stage}"
    (staging / edited).write_bytes(rebuilt.data)
    ir = {rebuilt.stage: edited} if rebuilt.stage != rebuilt.image_stage else {}
    for stage, text in rebuilt.stages.items():
        if stage != rebuilt.stage:
            ir[stage] = f"{function}.{stage}"
            (staging / ir[stage]).write_text(text)
    cubin_file = artifacts.cubin_name(function, rebuilt.image_stage)
    (staging / cubin_file).write_bytes(rebuilt.cubin)
    metadata = (json.dumps(rebuilt.metadata, sort_keys=True, separators=(",", ":")) + "\n").encode()
    (staging / artifacts.METADATA).write_bytes(metadata)
    record = {
        "format": RECORD_FORMAT,
        "variant": variant_id,
        "target": target_name,
        "stage": rebuilt.stage,
        "sha256": rebuilt.sha256,
        "file": edited,
        "edited": str(Path(rebuilt.path).resolve()),
        "cubin": {"file": cubin_file, "size": len(rebuilt.cubin), "sha256": _sha256(rebuilt.cubin)},
        "metadata": {"file": artifacts.METADATA, "sha256": _sha256(metadata)},
        "ir": dict(sorted(ir.items(), key=lambda item: STAGES.index(item[0]))),
        "ptx_target": artifacts.ptx_target(rebuilt.stages["ptx"]) if "ptx" in rebuilt.stages else "",
        "ptxas": rebuilt.ptxas,
        "carried": list(rebuilt.carried),
        "replaced_cubin_sha256": replaced_cubin_sha256,
    }
    write_atomically(staging / RECORD, (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
    _replace_folder(staging, where)
    return Override(where, record)


def _replace_folder(new, old):
    if old.exists():
        retired = old.with_name(f".{old.name}.old-{os.getpid()}")
        shutil.rmtree(retired, ignore_errors=True)
        old.rename(retired)
        new.rename(old)
        shutil.rmtree(retired)
    else:
        new.rename(old)


def drop(outdir, variant_id, target_name):
    """Remove an image's override; the stage it was rebuilt from, or None when there was none."""
    where = folder(outdir, variant_id, target_name)
    if not where.is_dir():
        return None
    try:
        stage = json.loads((where / RECORD).read_text()).get("stage")
    except (OSError, ValueError, AttributeError):
        stage = "unknown"
    (where / RECORD).unlink(missing_ok=True)  # the record first: a half-removed folder is no override
    shutil.rmtree(where)
    for parent in (where.parent, where.parent.parent):
        try:
            parent.rmdir()
        except OSError:
            break
    return stage


def listed(outdir):
    """(variant id, target name) of every override folder with a record, sorted."""
    root = Path(outdir) / ROOT
    if not root.is_dir():
        return []
    return sorted((record.parent.parent.name, record.parent.name) for record in root.glob(f"*/*/{RECORD}"))


def notes(outdir, planned):
    """What a build tells about the overrides in OUTDIR, given its jobs: each one it keeps (and
    whether the variant was compiled differently since the override was made), and those no job
    uses. Returns (lines, [(variant id, target name)] kept)."""
    jobs = {(job.variant_id, job.target): job for job in planned}
    lines, kept = [], []
    for variant_id, target_name in listed(outdir):
        job = jobs.get((variant_id, target_name))
        where = Path(ROOT) / variant_id / target_name
        if job is None:
            lines.append(f"{where.as_posix()}: not used (this spec has no variant {variant_id} for {target_name}); "
                         f"delete the folder or {drop_command(outdir, variant_id, target_name)}")
            continue
        override = read(outdir, variant_id, target_name)
        kept.append((variant_id, target_name))
        lines.append(f"{variant_id} for {target_name}: kept the kernel taot from-ir rebuilt from an edited "
                     f"{override.stage} ({where.as_posix()}); {drop_command(outdir, variant_id, target_name)} "
                     f"restores the compiled one")
        compiled = artifacts.read_record(job.artifact_dir)
        if compiled is not None and compiled["cubin"]["sha256"] != override.record["replaced_cubin_sha256"]:
            lines.append(f"warning: {variant_id} for {target_name} compiles to a different kernel than when its "
                         f"override was made (its inputs changed); the override still replaces it")
    return lines, kept


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---- a written library: its manifest, an image in it, the compiled kernel behind the image ----

@dataclass(frozen=True)
class Located:
    """One image of a written manifest, with the kernel and variant it belongs to (manifest dicts)."""
    manifest: dict
    kernel: dict
    variant: dict
    image: dict

    @property
    def variant_id(self):
        return self.variant["id"]

    @property
    def target(self):
        return self.image["target"]

    @property
    def label(self):
        return f"variant {self.variant_id} for {self.target}"


def load_manifest(outdir):
    return read_manifest(outdir, "give a folder `taot build` or `taot compile` wrote")


def locate(outdir, variant_id, target_text=None):
    """The image of `variant_id` for the target `target_text` names (needed when the variant has
    images for several targets). TaotError naming the variants, or the variant's targets, there."""
    manifest = load_manifest(outdir)
    found = [(kernel, variant) for kernel in manifest.get("kernels", []) for variant in kernel.get("variants", [])
             if variant.get("id") == variant_id]
    if not found:
        ids = [variant["id"] for kernel in manifest.get("kernels", []) for variant in kernel.get("variants", [])]
        raise TaotError(f"{Path(outdir) / MANIFEST}: no variant '{variant_id}'{_suggestion(variant_id, ids)}; "
                        f"its variants: {_listing(ids)}")
    kernel, variant = found[0]
    images = variant.get("images", [])
    targets = [image["target"] for image in images]
    if target_text is None:
        if len(images) != 1:
            raise TaotError(f"variant {variant_id} has images for {', '.join(targets)}: pick one with --target")
        return Located(manifest, kernel, variant, images[0])
    wanted = parse_target(target_text)
    for image in images:
        if wanted is not None and parse_target(image["target"]) == wanted:
            return Located(manifest, kernel, variant, image)
    raise TaotError(f"variant {variant_id} has no image for {target_text}; its targets: {', '.join(targets)}")


def _suggestion(text, choices):
    close = difflib.get_close_matches(text, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _listing(ids, shown=12):
    if not ids:
        return "none"
    more = f", ... ({len(ids) - shown} more; taot compile SPEC --list prints them all)" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def compiled_folder(outdir, located):
    """The artifact folder of the compiled image (the one an override replaces), with its record."""
    from .manifest import artifact_dir
    where = artifact_dir(outdir, located.variant_id, located.target)
    record = artifacts.read_record(where)
    if record is None:
        raise TaotError(f"{where}: the compiled artifacts of {located.label} are missing or damaged; "
                        f"run taot build again")
    return where, record


def reference(outdir, located):
    """The kernel a rebuild of this image must fit: the compiled one (its cubin and kept IR stages
    give the signature), with the metadata of the image in use now (the override's, when there is
    one), which is what the rebuild carries over."""
    where, record = compiled_folder(outdir, located)
    metadata = json.loads((where / record["metadata"]["file"]).read_text())
    try:
        current = read(outdir, located.variant_id, located.target)
    except OverrideDamaged:  # rebuilding over a damaged override starts from the compiled kernel
        current = None
    if current is not None:
        metadata = json.loads((current.folder / current.record["metadata"]["file"]).read_text())
    stages = {stage: ir_files.read_stage(where / name) for stage, name in record["ir"].items()}
    names = tuple(located.variant.get("params", [])) + ("global_scratch", "profile_scratch")
    return Reference(label=located.label, arch=parse_target(located.image["target"]).arch, metadata=metadata,
                     cubin=(where / record["cubin"]["file"]).read_bytes(), stages=stages, parameter_names=names)


def refresh_manifest(outdir, located):
    """Rewrite the image's entry in OUTDIR/manifest.json from its folders, as a build writes it (the
    override applied when there is one). True when the file changed."""
    from .manifest import image_entry, render
    manifest = load_manifest(outdir)
    for kernel in manifest["kernels"]:
        for variant in kernel["variants"]:
            if variant["id"] != located.variant_id:
                continue
            for index, image in enumerate(variant["images"]):
                if image["target"] == located.target:
                    variant["images"][index] = image_entry(outdir, variant["id"], kernel["function"], image["target"])
    return write_if_changed(Path(outdir) / MANIFEST, render(manifest))
