# Compile a validated library into OUTDIR, holding its lock: plan jobs, skip up-to-date ones whose
# artifacts are intact, compile the rest in parallel, write manifest.json when everything succeeded,
# and remove the artifact folders this library no longer uses.
import contextlib
import multiprocessing
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path


from . import artifacts
from ..library import overrides
from . import jobs as job_module
from ..errors import CompileError, SpecError
from ..triton_api import compiler
from ..fsutil import write_if_changed
from .ir_files import DEFAULT_MODE
from ..library.manifest import artifact_dir, build_manifest, render
from .output_lock import OutputLock
from .worker_pool import children_ignore_ctrl_c, end_workers


@dataclass
class BuildResult:
    compiled: int
    up_to_date: int
    seconds: float
    manifest_path: Path
    manifest_changed: bool
    removed_dirs: list = field(default_factory=list)
    overrides: list = field(default_factory=list)  # (variant id, target) of images taot from-ir rebuilt, kept


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped the build after `compiled` of `total` compiles; every artifact folder is then
    complete or has no record (compiled again next time), and no manifest is left."""

    def __init__(self, compiled, total):
        super().__init__(f"{compiled} of {total} compiled; run the same command to continue")
        self.compiled = compiled
        self.total = total


def plan_jobs(library, outdir, ir=DEFAULT_MODE):
    """(jobs in manifest order, variant id -> variant hash). Raises SpecError when Triton rejects the
    options of a variant for a target (e.g. num_ctas > 1 before sm_90)."""
    env = compiler.cache_invalidating_env()
    backend_hashes = {target.arch: compiler.backend_hash(target.arch) for target in library.targets}
    parsed_options = {}
    planned, hashes = [], {}
    for kernel in library.kernels:
        for variant in library.variants[kernel.name]:
            inputs = job_module.variant_inputs(kernel, variant)
            hashes[variant.id] = job_module.variant_hash(inputs)
            for target in kernel.targets:
                if target.name not in variant.targets:
                    continue
                options = _parsed_options(library, kernel, variant, target, parsed_options)
                target_key = (kernel.target_cache_keys or {}).get(target.name, kernel.cache_key)  # device-dependent
                planned.append(job_module.Job(
                    variant_id=variant.id, target=target.name, arch=target.arch,
                    source=str(kernel.source), function=kernel.function,
                    inputs=job_module.target_inputs(dict(inputs, cache_key=target_key), target, options,
                                                    backend_hashes[target.arch], env),
                    artifact_dir=str(artifact_dir(outdir, variant.id, target.name).resolve()),
                    library=library.name, ir=ir, module=kernel.module,
                    search=str(library.path.parent) if kernel.module else None,
                    device=library.device.get(target.name)))
    return planned, hashes


def _parsed_options(library, kernel, variant, target, cache):
    options = job_module.variant_options(kernel, variant)
    key = (target.arch, tuple(sorted(options.items())))
    other = "amd" if target.vendor == "nvidia" else "nvidia"
    for name, value in options.items():  # another vendor's option (waves_per_eu on sm_90) compiles nothing new
        if name not in compiler.option_fields(target.vendor) and name in compiler.option_fields(other) \
                and value != compiler.option_default(name, other):
            default = compiler.option_default(name, other)
            keep = f"vendor == '{other}'" + (f" or {name} == {default}" if default is not None else "")
            raise SpecError(library.label, f"{kernel.key}.options", f"options of {target.name}'s backend",
                            f"{name} = {value} is an option of {other.upper()} targets only (variant {variant.id}): "
                            f"keep it to them with a where filter such as \"{keep}\"")
    if key not in cache:
        try:
            cache[key] = compiler.parse_options(target.arch, options)
        except (ValueError, AssertionError) as error:
            raise SpecError(library.label, f"{kernel.key}.options", f"options Triton accepts for {target.name}",
                            f"{error} (variant {variant.id}; restrict it with a where filter)") from None
    return cache[key]


def build(library, outdir, workers=None, progress=None, notice=None, ir=DEFAULT_MODE, wait=True, cluster=None,
          lock_held=False):
    """Bring OUTDIR up to date with `library`, keeping the IR stages as `ir` says (ir_files.MODES).
    `progress(done, total, outcome)` is called as each compile finishes, `notice(line)` for what the
    user should know (waiting for another build, a damaged artifact compiled again). Holds OUTDIR's
    lock throughout (waiting for it, or with wait=False raising OutputBusy), unless `lock_held`: the
    caller holds it. `cluster`: a cluster.Cluster whose nodes compile the jobs (else processes here).
    Raises CompileError (after removing the then stale manifest) if a job failed, Interrupted on Ctrl-C."""
    start = time.perf_counter()
    outdir = Path(outdir)
    with contextlib.nullcontext() if lock_held else OutputLock(outdir, wait=wait, notice=notice):
        planned, hashes = plan_jobs(library, outdir, ir)
        stale, fresh = _split_stale(planned, outdir, notice)
        manifest_path = outdir / "manifest.json"
        try:
            if cluster is not None:
                failures = _run_on_cluster(cluster, stale, progress)
            else:
                failures = run_jobs(stale, _worker_count(workers, len(stale), notice), progress)
            if failures:
                manifest_path.unlink(missing_ok=True)
                raise CompileError([(outcome.variant_id, outcome.target, outcome.error) for outcome in failures])
            for job in fresh:
                artifacts.adopt(job.artifact_dir, job.function, library.name, ir)
            changed = write_if_changed(manifest_path, render(build_manifest(library, outdir, hashes)))
            override_notes, kept = overrides.notes(outdir, planned)  # the manifest points at these
            for line in override_notes if notice is not None else ():
                notice(line)
        except KeyboardInterrupt:  # the old manifest may name artifacts replaced since: the next build writes it
            manifest_path.unlink(missing_ok=True)
            raise
        removed = remove_stale_artifacts(outdir, planned, library.name)
    return BuildResult(compiled=len(stale), up_to_date=len(planned) - len(stale),
                       seconds=time.perf_counter() - start, manifest_path=manifest_path,
                       manifest_changed=changed, removed_dirs=removed, overrides=kept)


def _split_stale(planned, outdir, notice):
    """(jobs to compile, jobs up to date). A folder whose artifacts were damaged since they were
    compiled is compiled again; each such reason is reported once, with the first folder and how
    many others share it."""
    stale, fresh, damaged = [], [], {}
    for job in planned:
        reason = artifacts.stale_reason(job.artifact_dir, job.inputs, job.ir)
        if reason is None:
            fresh.append(job)
            continue
        stale.append(job)
        if reason:
            damaged.setdefault(reason, []).append(job)
    if notice is not None:
        for reason, jobs in damaged.items():
            where = Path(os.path.relpath(jobs[0].artifact_dir, outdir.resolve())).as_posix()
            others = f" and {len(jobs) - 1} other folders" if len(jobs) > 1 else ""
            notice(f"{where}{others}: {reason}; recompiling")
    return stale, fresh


# What one compile process may hold at its peak (Triton imported, one kernel's MLIR and LLVM
# modules, ptxas beside it): the memory available is divided by it.
WORKER_BYTES = 512 * 1024 * 1024


def available_memory():
    """Bytes of memory available to new processes (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _worker_count(asked, jobs, notice, cores=None, memory=None):
    """Compile processes to start: -j N (0 or None: every core), but no more than the cores (each
    compile is one core's work), the processes the available memory holds (WORKER_BYTES each) and
    the jobs; a -j that was capped is said. `cores`, `memory`: the machine's (for tests)."""
    cores = cores or os.cpu_count() or 1
    memory = memory if memory is not None else available_memory()
    fit = max(1, memory // WORKER_BYTES) if memory is not None else cores
    limit = min(cores, fit)
    wanted = asked or cores
    if wanted > limit and jobs > limit and notice is not None:
        why = (f"this machine has {cores} cores" if limit == cores else
               f"{memory / 2**30:.1f} GB of memory available holds {fit} (about {WORKER_BYTES / 2**30:.1f} GB each)")
        notice(f"{f'-j {asked}' if asked else f'{cores} workers (one per core)'}: {why}; compiling with {limit} "
               f"processes")
    return min(wanted, limit)


def run_jobs(pending, workers, progress=None):
    """Compile `pending` jobs, in this process when one worker (or one job) suffices, else in a pool
    of spawned processes. After the first failure no new job starts. Returns the failed outcomes.
    Ctrl-C ends the compiles under way and raises Interrupted; nothing of theirs is printed."""
    if not pending:
        return []
    with _InterruptWatch() as watch:
        if workers <= 1 or len(pending) == 1:
            return _run_here(pending, progress, watch)
        return _run_in_pool(pending, min(workers, len(pending)), progress)


class _InterruptWatch:
    """While active (main thread only), the first SIGINT raises KeyboardInterrupt and is remembered,
    for a Ctrl-C that native code swallowed (a killed ptxas makes a compile fail); later ones are
    ignored while the build stops."""

    def __enter__(self):
        self.requested = False
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if not self.requested:
            self.requested = True
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def _run_on_cluster(cluster, pending, progress):
    compiled = 0

    def report(done, total, outcome):
        nonlocal compiled
        compiled += outcome.error is None
        _report(progress, done, total, outcome)

    with _InterruptWatch():
        try:
            return cluster.run(pending, report=report)
        except KeyboardInterrupt:
            raise Interrupted(compiled, len(pending)) from None


def _run_here(pending, progress, watch):
    failures = []
    compiled = 0
    for done, job in enumerate(pending, start=1):
        try:
            outcome = job_module.run_job(job)
        except KeyboardInterrupt:
            raise Interrupted(compiled, len(pending)) from None
        except Exception:
            # Code that a Ctrl-C interrupts half-way can fail in its own cleanup (Triton 3.6's
            # knobs.scope() raises UnboundLocalError when interrupted before it saved its state):
            # after a Ctrl-C, that is the interruption, not an error of the build.
            if watch.requested:
                raise Interrupted(compiled, len(pending)) from None
            raise
        if outcome.error is None:
            compiled += 1
        if watch.requested:
            raise Interrupted(compiled, len(pending))
        _report(progress, done, len(pending), outcome)
        if outcome.error is not None:
            failures.append(outcome)
            break
    return failures


def _run_in_pool(pending, workers, progress):
    failures = []
    compiled = 0
    context = multiprocessing.get_context("spawn")
    # The workers' temporary files (Triton's cache, ptxas' input) go to one folder removed at the end,
    # also when workers were ended mid-compile.
    with tempfile.TemporaryDirectory(prefix="taot-build-", ignore_cleanup_errors=True) as scratch, \
            ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                initargs=(scratch,)) as pool:
        jobs_of, done = {}, 0
        try:
            with children_ignore_ctrl_c():  # the workers start in the first submits
                for job in pending:
                    jobs_of[pool.submit(job_module.run_job, job)] = job
            waiting = set(jobs_of)
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
                    else:
                        compiled += 1
                if failures:
                    for future in waiting:
                        future.cancel()
        except KeyboardInterrupt:
            end_workers(pool)
            raise Interrupted(compiled, len(pending)) from None
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


def _init_worker(scratch):
    """Workers leave Ctrl-C to the parent (they start with it blocked, and ignore it from here on, as
    ptxas, which they start, does), which ends them, a job ended mid-write leaving its folder without a
    record, so that it is compiled again next time; their temporary files go to `scratch`; Triton is
    imported once per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tempfile.tempdir = scratch
    from ..triton_api import compiler as _  # noqa: F401


def _report(progress, done, total, outcome):
    if progress is not None:
        progress(done, total, outcome)


def remove_stale_artifacts(outdir, planned, library_name):
    """Release the artifacts/<variant>/<target> folders that `library_name` used and no job needs
    now: each is deleted when no other library uses it (artifacts.release); then variant folders left
    empty. Folders of other libraries, or without a record, are never deleted."""
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
            if target_dir.is_dir() and not target_dir.is_symlink() and target_dir.resolve() not in wanted \
                    and artifacts.release(target_dir, library_name):
                removed.append(target_dir)
                removed_here = True
        if removed_here and not any(variant_dir.iterdir()):
            variant_dir.rmdir()
    return removed
