# Compile a validated library into OUTDIR: plan jobs, skip up-to-date ones, compile the rest in parallel,
# write manifest.json when everything succeeded, and remove artifact folders that no longer belong.
import multiprocessing
import os
import shutil
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import triton
from triton.compiler.compiler import get_cache_invalidating_env_vars

from . import jobs as job_module
from .errors import CompileError, SpecError
from .fsutil import write_if_changed
from .manifest import artifact_dir, build_manifest, render


@dataclass
class BuildResult:
    compiled: int
    up_to_date: int
    seconds: float
    manifest_path: Path
    manifest_changed: bool
    removed_dirs: list = field(default_factory=list)


def plan_jobs(library, outdir):
    """(jobs in manifest order, variant id -> variant hash). Raises SpecError when Triton rejects the
    options of a variant for a target (e.g. num_ctas > 1 before sm_90)."""
    env = get_cache_invalidating_env_vars()
    backends = {target.capability: triton.compiler.make_backend(target.gpu_target()) for target in library.targets}
    backend_hashes = {capability: backend.hash() for capability, backend in backends.items()}
    parsed_options = {}
    planned, hashes = [], {}
    for kernel in library.kernels:
        for variant in library.variants[kernel.name]:
            inputs = job_module.variant_inputs(kernel, variant)
            hashes[variant.id] = job_module.variant_hash(inputs)
            for target in kernel.targets:
                if target.name not in variant.targets:
                    continue
                options = _parsed_options(library, kernel, variant, target, backends, parsed_options)
                planned.append(job_module.Job(
                    variant_id=variant.id, target=target.name, capability=target.capability,
                    source=str(kernel.source), function=kernel.function,
                    inputs=job_module.target_inputs(inputs, target, options, backend_hashes[target.capability], env),
                    artifact_dir=str(artifact_dir(outdir, variant.id, target.name).resolve())))
    return planned, hashes


def _parsed_options(library, kernel, variant, target, backends, cache):
    options = job_module.variant_options(kernel, variant)
    key = (target.capability, tuple(sorted(options.items())))
    if key not in cache:
        try:
            cache[key] = backends[target.capability].parse_options(dict(options)).__dict__
        except (ValueError, AssertionError) as error:
            raise SpecError(library.label, f"{kernel.key}.options", f"options Triton accepts for {target.name}",
                            f"{error} (variant {variant.id}; restrict it with a where filter)") from None
    return cache[key]


def build(library, outdir, workers=None, progress=None):
    """Bring OUTDIR up to date with `library`. `progress(done, total, outcome)` is called as each
    compile finishes. Raises CompileError (after removing the then stale manifest) if a job failed."""
    start = time.perf_counter()
    outdir = Path(outdir)
    planned, hashes = plan_jobs(library, outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    stale = [job for job in planned if not job_module.is_up_to_date(job)]
    failures = run_jobs(stale, workers or os.cpu_count() or 1, progress)
    manifest_path = outdir / "manifest.json"
    if failures:
        manifest_path.unlink(missing_ok=True)
        raise CompileError([(outcome.variant_id, outcome.target, outcome.error) for outcome in failures])
    changed = write_if_changed(manifest_path, render(build_manifest(library, outdir, hashes)))
    removed = remove_stale_artifacts(outdir, planned)
    return BuildResult(compiled=len(stale), up_to_date=len(planned) - len(stale),
                       seconds=time.perf_counter() - start, manifest_path=manifest_path,
                       manifest_changed=changed, removed_dirs=removed)


def run_jobs(pending, workers, progress=None):
    """Compile `pending` jobs, in this process when one worker (or one job) suffices, else in a pool
    of spawned processes. After the first failure no new job starts. Returns the failed outcomes."""
    if not pending:
        return []
    if workers <= 1 or len(pending) == 1:
        return _run_here(pending, progress)
    return _run_in_pool(pending, min(workers, len(pending)), progress)


def _run_here(pending, progress):
    failures = []
    for done, job in enumerate(pending, start=1):
        outcome = job_module.run_job(job)
        _report(progress, done, len(pending), outcome)
        if outcome.error is not None:
            failures.append(outcome)
            break
    return failures


def _run_in_pool(pending, workers, progress):
    failures = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker) as pool:
        jobs_of = {pool.submit(job_module.run_job, job): job for job in pending}
        waiting = set(jobs_of)
        done = 0
        try:
            while waiting:
                finished, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                for future in finished:
                    if future.cancelled():
                        continue
                    done += 1
                    outcome = _outcome(future, jobs_of[future])
                    _report(progress, done, len(pending), outcome)
                    if outcome.error is not None:
                        failures.append(outcome)
                if failures:
                    for future in waiting:
                        future.cancel()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return failures


def _outcome(future, job):
    try:
        return future.result()
    except BrokenProcessPool:
        return job_module.Outcome(job.variant_id, job.target, 0.0,
                                  "a compile process died (a crash inside Triton, MLIR or LLVM); "
                                  "run with -j 1 to see its last output")


def _init_worker():
    """Workers leave Ctrl-C to the parent, which cancels the queue; Triton is imported once per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import triton.compiler  # noqa: F401


def _report(progress, done, total, outcome):
    if progress is not None:
        progress(done, total, outcome)


def remove_stale_artifacts(outdir, planned):
    """Remove artifacts/<variant>/<target> folders that hold an inputs.json but belong to no job now;
    then variant folders left empty. Nothing else is ever deleted."""
    root = Path(outdir) / "artifacts"
    wanted = {Path(job.artifact_dir) for job in planned}
    removed = []
    if not root.is_dir():
        return removed
    for variant_dir in sorted(root.iterdir()):
        if not variant_dir.is_dir() or variant_dir.is_symlink():
            continue
        removed_here = False
        for target_dir in sorted(variant_dir.iterdir()):
            if target_dir.is_dir() and not target_dir.is_symlink() and (target_dir / "inputs.json").is_file() \
                    and target_dir.resolve() not in wanted:
                shutil.rmtree(target_dir)
                removed.append(target_dir)
                removed_here = True
        if removed_here and not any(variant_dir.iterdir()):
            variant_dir.rmdir()
    return removed
