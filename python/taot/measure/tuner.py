# `taot tune`'s engine. The coordinator (this module) splits a bench file's tune shapes into tasks,
# runs one worker process per GPU (python/taot.measure.tune_worker.py), records every candidate's outcome in
# a journal as it arrives (so a run can resume, and a candidate that kills or hangs its worker is
# recorded and skipped), and finally writes the tuned table in taot's format and vLLM's.
#
# Candidates are the library's compiled variants that accept a shape's arguments: nothing is
# compiled while tuning. Each candidate is checked against the bench file's reference (the gate),
# timed briefly, and timed in full unless it is far behind the best so far (early stopping).
import ctypes
import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from .benchfile import Shape, load_bench_file
from .. import IMPORT_ROOT
from ..errors import Problem, TaotError
from ..fsutil import write_atomically

# A candidate's outcome. ok: timed in full; pruned: timed briefly, far behind the best; wrong: failed
# the correctness gate; error: its launch failed; filtered: needs more shared memory or registers
# than the device has; crashed: its worker died while running it; hung: its worker stopped
# answering while running it (killed after the candidate timeout).
STATUSES = ("ok", "pruned", "wrong", "error", "filtered", "crashed", "hung")
JOURNAL_SCHEMA = "taot.tune.journal"
JOURNAL_VERSION = 1
_CUDA_ERROR_NO_DEVICE = 100  # cuInit's answer on a machine with a driver and no GPU


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One compiled variant as a candidate for a shape: its id, its config (field -> value) and the
    worker's handle on it (the variant index)."""
    id: str
    config: dict
    index: int = None


# ---------------------------------------------------------------------------------------------------
# The backend: what a worker measures with. RealBackend uses the built module and torch; tests give a
# file of their own (--backend) defining BACKEND(settings) with the same methods.
# ---------------------------------------------------------------------------------------------------

class FatalError(Problem):
    """The worker's CUDA context cannot be used any more (a launch failed with a driver error)."""


class RealBackend:
    FatalError = FatalError

    def __init__(self, settings):
        self.startup_s = {}  # seconds of each step of starting, for the coordinator's "ready" line
        clock = time.perf_counter()

        def took(step):
            nonlocal clock
            now = time.perf_counter()
            self.startup_s[step], clock = now - clock, now

        import torch

        from ..library.built import load_library
        from .calls import TimingSettings  # noqa: F401  (the settings' keywords are its fields)

        took("importing torch")
        self.torch = torch
        self.device = "cuda:0"
        torch.cuda.set_device(self.device)
        self.device_name = torch.cuda.get_device_name(self.device)
        took("starting CUDA")
        self.library = load_library(settings["library"], settings.get("module_dir"))
        self.kernel = self.library.kernel(settings["kernel"])
        self.info = self.library.info(settings["kernel"])
        took("loading the library")
        self.kernel_bench = load_bench_file(settings["bench"]).kernel(settings["kernel"])
        took("loading the bench file")
        self.variants = self.kernel.variants()
        self.key_positions = [self.info.parameters.index(name) for name in settings["key"]]
        self.check = settings.get("check", True)
        properties = torch.cuda.get_device_properties(self.device)
        self.shared_limit = getattr(properties, "shared_memory_per_block_optin", None)
        uuid = getattr(properties, "uuid", None)  # the GPU itself, whatever CUDA_VISIBLE_DEVICES calls it
        self.gpu_id = None if uuid is None else str(uuid) if str(uuid).startswith("GPU-") else f"GPU-{uuid}"
        self.cache = None
        self.kept = {}  # shape -> (its ArgumentCache, begin's answer), the KEPT_SHAPES entered last

    def begin(self, shape):
        """(key, accepted, filtered) for `shape`, whose arguments and reference the later calls use. The
        last KEPT_SHAPES shapes are kept: a worker goes back to a key for its final comparison after
        starting the next one, and making a big shape's arguments and reference costs seconds."""
        if shape in self.kept:
            self.kept[shape] = self.kept.pop(shape)  # the most recent last
        else:
            while len(self.kept) >= KEPT_SHAPES:
                del self.kept[next(iter(self.kept))]
            self.cache, self.shape = None, None  # (the dropped shape's tensors go before the new ones come)
            try:
                self.kept[shape] = self._begin(shape)
            except self._out_of_memory():  # the shapes kept take room this one needs: it comes alone
                self.kept.clear()
                self.cache, self.shape = None, None
                self.torch.cuda.empty_cache()
                self.kept[shape] = self._begin(shape)
        (self.cache, answer), self.shape = self.kept[shape], shape
        return answer

    def _out_of_memory(self):
        return getattr(self.torch.cuda, "OutOfMemoryError", MemoryError)

    def _begin(self, shape):
        from .bench import ArgumentCache

        self.cache = ArgumentCache(self.kernel_bench, self.info, self.device)
        self.shape = shape
        accepted, filtered = [], []
        for variant in self.variants:
            config = variant["config"]
            args, _, _ = self.cache.entry(shape, config)
            try:
                self.kernel.choose(*args, variant=variant["index"])
            except (ValueError, TypeError):
                continue  # not a variant for these arguments (another dtype, specialization, rule)
            candidate = Candidate(variant["id"], _plain(config), variant["index"])
            (filtered if self._too_big(variant) else accepted).append(candidate)
        args, _, _ = self.cache.entry(shape, accepted[0].config if accepted else {})
        return self.cache, (self.key_of(args), accepted, filtered)

    def key_of(self, args):
        """The tuning key's values in `args` (a call's positional arguments) as tables record them."""
        return [_plain(args[p]) for p in self.key_positions]

    def _too_big(self, variant):
        return self.shared_limit is not None and any(image["shared"] > self.shared_limit for image in variant["images"])

    def filter_reasons(self, filtered):
        return [f"needs {max(i['shared'] for i in self.variants[c.index]['images'])} bytes of shared memory; "
                f"the device allows {self.shared_limit} per block" for c in filtered]

    def gate(self, candidate):
        from .calls import compare_outputs

        args, guard, expected = self.cache.entry(self.shape, candidate.config)
        if not self.check or expected is None:
            return []
        guard.restore()
        self._launch(lambda: self.kernel(*args, variant=candidate.index))
        return compare_outputs(self.kernel_bench, self.cache.output_names, guard.outputs(), expected)

    def time(self, candidate, timing):
        args, _, _ = self.cache.entry(self.shape, candidate.config)
        return self._launch(lambda: self.kernel.time(*args, variant=candidate.index, **timing)["ms"])

    def _launch(self, action):
        try:
            result = action()
            self.torch.cuda.synchronize(self.device)
            return result
        except RuntimeError as error:  # a driver error: the context may be lost
            raise FatalError(str(error)) from None

    def load_table(self, path):
        self.kernel.load_tuning(path)

    def choose(self, shape):
        from .bench import ArgumentCache

        cache = ArgumentCache(self.kernel_bench, self.info, self.device)
        config = cache.default_config(self.kernel) if self.kernel_bench.args_depend_on else None
        index, _ = self.kernel.choose(*cache.arguments(shape, config))
        if self.kernel_bench.args_depend_on:  # the chosen config's arguments may choose differently
            index, _ = self.kernel.choose(*cache.arguments(shape, self.variants[index]["config"]))
        return self.variants[index]["id"]


KEPT_SHAPES = 2  # shapes a RealBackend keeps entered (their arguments and the reference's outputs)


def _plain(value):
    """JSON-ready: dicts and numbers as they are, anything else (a dtype) as text."""
    if isinstance(value, dict):
        return {name: _plain(item) for name, item in value.items()}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "item") and getattr(value, "numel", lambda: 2)() == 1:
        return value.item()
    return str(value)


def read_journal(path):
    """(header, tasks, device) of the journal at `path`: tasks as Journal.tasks holds them, device as
    its device line names it (None before one). A last line cut short by an interruption is left
    out; TaotError for any other line that is not JSON, or a file without a header line."""
    path = Path(path)
    lines = path.read_text().splitlines()
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break  # the last line, cut short by the interruption
            raise TaotError(f"{path}:{number}: not a JSON line") from None
    if not entries or "header" not in entries[0]:
        raise TaotError(f"{path}: not a taot tune journal (no header line)")
    tasks, device = {}, None
    for entry in entries[1:]:
        device = _apply_entry(tasks, entry) or device
    return entries[0]["header"], tasks, device


def _apply_entry(tasks, entry):
    """Applies one journal line to `tasks` (task -> {"key", "candidates": {id: config}, "results": {id:
    line}, "final", "chosen", "done"}); returns the device a device line names, else None."""
    if "device" in entry:
        return entry["device"]
    task = entry.get("task")
    state = tasks.setdefault(task, {"key": None, "candidates": {}, "results": {}, "done": False})
    if "begin" in entry:
        state["key"] = entry["key"]
        state["candidates"] = {c["id"]: c["config"] for c in entry["candidates"]}
    elif "result" in entry:
        state["results"][entry["result"]] = entry
    elif "final" in entry:
        state["final"], state["chosen"] = entry["final"], entry["chosen"]
    elif "end" in entry:
        state["done"] = True
    return None


def make_backend(settings):
    if settings.get("backend"):
        import importlib.util

        spec = importlib.util.spec_from_file_location("taot_tune_backend", settings["backend"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        backend = module.BACKEND(settings)
        backend.FatalError = FatalError
        return backend
    return RealBackend(settings)


def load_shapes(settings):
    """The tasks' shapes, as the coordinator chose them (its --where applied), by task index."""
    return [Shape(shape.items()) for shape in settings["shapes"]]


# ---------------------------------------------------------------------------------------------------
# The journal: one JSON object per line, appended and flushed as results arrive.
# ---------------------------------------------------------------------------------------------------

class Journal:
    """`<kernel>.journal.jsonl` in the output folder: a header (what is tuned, where, how), then per
    task a begin line (its key and candidates), one line per candidate outcome and an end line."""

    def __init__(self, path, header, resume):
        self.path = Path(path)
        self.tasks = {}  # task -> {"key", "candidates": {id: config}, "results": {id: result}, "done"}
        self.device = None  # the device the results were measured on, once a worker has said
        if self.path.exists():
            if not resume:
                raise TaotError(f"{self.path}: a journal of an earlier run is there; give --resume to go on with "
                                f"it, or --restart to start over")
            self._read(header)
        elif resume:
            raise TaotError(f"{self.path}: no journal to resume")
        self.file = open(self.path, "a")
        if not self.tasks and self.path.stat().st_size == 0:
            self.write({"header": header})

    def _read(self, header):
        old, self.tasks, self.device = read_journal(self.path)
        for name in ("schema", "library", "kernel", "key", "shapes"):
            if old.get(name) != header.get(name):
                raise TaotError(f"{self.path}: the journal is of another run ({name} {old.get(name)!r}, now "
                                f"{header.get(name)!r}); give --restart to start over")
        if not self.path.read_text().endswith("\n"):
            with open(self.path, "a") as file:
                file.write("\n")  # a cut line stays behind, ignored; later lines start clean

    def _apply(self, entry):
        self.device = _apply_entry(self.tasks, entry) or self.device

    def write(self, entry):
        """Appends `entry`, flushed to the system at once (a killed run loses nothing); written to the
        disk (fsync) at a key's end: per candidate, that cost more than timing it on a fast GPU."""
        if "header" not in entry:
            self._apply(entry)
        self.file.write(json.dumps(entry, sort_keys=True) + "\n")
        self.file.flush()
        if "end" in entry or "header" in entry:
            os.fsync(self.file.fileno())

    def close(self):
        if not self.file.closed:
            self.file.close()


# ---------------------------------------------------------------------------------------------------
# The coordinator
# ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class TuneOptions:
    gpus: list                 # indices among the GPUs this process sees, one worker each
    candidate_timeout: float   # seconds a candidate may run before its worker is killed
    max_restarts: int = 20     # per worker, then the run fails
    worker_factory: object = None  # (gpu, settings, messages) -> a worker; default: a process here (_Worker)
    device: str = None         # the device to tune (--device); default: the journal's, else the first worker's
    other_devices: str = "fail"  # a worker on another device: "fail" the run, or "skip" it, naming it


def visible_gpu_count():
    """How many GPUs this process sees (CUDA_VISIBLE_DEVICES applies), asked of the CUDA driver
    itself: importing torch for it would cost seconds. 0 when the driver finds no device; TaotError
    when there is no driver or it fails to start."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        raise TaotError(f"no CUDA driver to run the workers on: {error}") from None
    status = driver.cuInit(0)
    if status == _CUDA_ERROR_NO_DEVICE:
        return 0
    count = ctypes.c_int(0)
    if status == 0:
        status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        name = ctypes.c_char_p()
        driver.cuGetErrorName(status, ctypes.byref(name))
        raise TaotError(f"the CUDA driver failed to start: error {status}"
                        + (f" ({name.value.decode()})" if name.value else ""))
    return count.value


def worker_visible_devices(gpu):
    """CUDA_VISIBLE_DEVICES for a worker bound to GPU `gpu` of those this process sees: an entry of
    this process's own CUDA_VISIBLE_DEVICES (an index or a UUID) where it has one."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return str(gpu)
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[gpu] if gpu < len(entries) else str(gpu)


class _Worker:
    def __init__(self, gpu, settings, messages):
        self.gpu = gpu
        self.settings = settings
        self.messages = messages
        self.restarts = 0
        self.process = None
        self.unit = None        # the request it is working on (None: free)
        self.running = None     # (task, candidate) started and not yet answered
        self.started_at = None
        self.start()

    def start(self):
        environment = dict(os.environ, CUDA_VISIBLE_DEVICES=worker_visible_devices(self.gpu),
                           PYTHONUNBUFFERED="1")
        python_path = str(IMPORT_ROOT)
        environment["PYTHONPATH"] = python_path + os.pathsep + environment.get("PYTHONPATH", "")
        self.launched_at = time.monotonic()
        self.process = subprocess.Popen([sys.executable, "-m", "taot.measure.tune_worker", "--settings",
                                         json.dumps(self.settings)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=environment)
        process = self.process
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process):
        for line in process.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue  # a stray print of the kernel's own code: not ours
            self.messages.put((self, process, message))
        process.wait()
        self.messages.put((self, process, {"exited": process.returncode}))

    def send(self, request):
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # its exit is on its way to the queue

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self):
        self.send({"quit": True})
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()


# Each worker lists a key of its own and measures its candidates in chunks; a worker with no key left
# to list shares the key with the most candidates left. Keeping a key on one worker saves making its
# arguments and reference on every GPU, and a key's candidates timed on one GPU compare exactly.
# Once all are measured, the key's leaders are timed again together in FINAL_ROUNDS interleaved rounds
# on the GPU that listed it (its home), and the fastest there is the key's choice. GPUs of one kind
# differ in speed by a few per cent, so the medians of two GPUs are not compared closely: each GPU's
# leaders are its candidates within LEADER_SPAN of its own best (and a chunk is pruned against the best
# of its own GPU), taken from each GPU in turn, best first, MAX_LEADERS in all (or one per GPU).
LEADER_SPAN = 1.05
OTHER_GPU_SPAN = 1.15  # well past the few per cent GPUs of one kind differ by
MAX_LEADERS = 8
FINAL_ROUNDS = 5
CHUNK = 32              # candidates per measure unit at most (fewer when a key has few per worker)
PROGRESS_SECONDS = 10.0  # between two progress lines, besides one at each key's end


@dataclasses.dataclass
class _Plan:
    """The coordinator's bookkeeping of one task (the journal holds its results): candidates not yet
    sent to a worker (None until the task's candidates are listed), those sent and not answered, and
    which of its begin and final units a worker holds."""
    remaining: list = None
    sent: set = dataclasses.field(default_factory=set)
    begin_sent: bool = False
    final_sent: bool = False
    home: object = None  # the worker that listed it, which runs its final comparison (None: any)


@dataclasses.dataclass
class _Usage:
    """What one worker did in this run, for the closing summary."""
    candidates: int = 0
    finals: int = 0
    busy_s: float = 0.0   # from sending a unit to its last answer
    setup_s: float = 0.0  # of which entering keys (making their arguments and references)


class Coordinator:
    """Runs the tasks over the workers in units (begin, measure a chunk, final); `say` prints progress."""

    def __init__(self, settings, shapes, journal, options, say):
        self.settings, self.shapes, self.journal, self.options, self.say = settings, shapes, journal, options, say
        self.pending = [t for t in range(len(shapes)) if not journal.tasks.get(t, {}).get("done")]
        self.plans = {task: _Plan() for task in self.pending}
        for task in self.pending:
            state = journal.tasks.get(task)
            if state and state["key"] is not None:  # listed by the run resumed
                self.plans[task].remaining = [c for c in state["candidates"] if c not in state["results"]]
        self.total = len(shapes)
        self.device = options.device
        self.skipped = set()  # workers on another device, when options.other_devices is "skip"
        self.ready = set()    # workers that have said they are ready (and, once, on which device)
        self.started = time.monotonic()
        self.measured_now = 0   # candidates measured by this run (not by the run resumed)
        self.last_progress = self.started
        self.failure = None
        self.messages = queue.Queue()  # (worker, process, message) from every worker's reader thread
        self.workers = []
        self.holding = {}  # worker -> the task it was sent work of last (a restarted worker goes on with it)
        self.gpu_ids = {}  # worker -> the GPU its results are recorded under (the GPU's UUID where it says)
        self.usage = {}    # worker -> _Usage

    def run(self):
        """Runs the pending tasks. The workers stay up for verify(); close() stops them."""
        self.workers = [self._new_worker(gpu) for gpu in self.options.gpus]
        self.usage = {worker: _Usage() for worker in self.workers}
        self._loop(self.workers, self.messages)
        if self.failure:
            raise TaotError(self.failure)
        self._say_usage()

    def _say_usage(self):
        elapsed = time.monotonic() - self.started
        for worker in self.workers:
            use = self.usage[worker]
            if worker not in self.skipped:
                self.say(f"GPU {worker.gpu}: {use.candidates} candidates, {use.finals} final comparisons; busy "
                         f"{use.busy_s:.1f} s of {elapsed:.1f} s, {use.setup_s:.1f} s of it making keys' arguments "
                         f"and references")

    def _new_worker(self, gpu):
        return (self.options.worker_factory or _Worker)(gpu, self.settings, self.messages)

    def close(self, interrupted=False):
        """Stops the workers: asked to quit (each finishes its unit), or at once when `interrupted`."""
        for worker in self.workers:
            if interrupted:
                worker.kill()
            worker.stop()
        self.workers = []

    def verify(self, table_path, expectations):
        """Loads the table into a worker (the first of run()'s, else a fresh one) and asks its automatic
        choice for each task's shape; returns [(task, expected id, chosen id)] where they differ.
        `expectations`: [(task, id)]."""
        alive = [w for w in self.workers if w.process.poll() is None]
        worker = alive[0] if alive else self._new_worker(self.options.gpus[0])
        if not alive:
            self.workers.append(worker)
        worker.unit = ("verify",)  # busy: an exit now is a failure
        request = {"verify": str(table_path), "tasks": [list(e) for e in expectations]}
        if alive:
            worker.send(request)
        try:
            while True:
                source, process, message = self.messages.get(timeout=max(60.0, self.options.candidate_timeout))
                if source is not worker or process is not worker.process:
                    continue
                if "ready" in message:
                    measured_on = self.device or self.journal.device
                    if measured_on and message["ready"]["device"] != measured_on:
                        raise TaotError(f"{self.journal.path}: measured on a {measured_on}; GPU {worker.gpu} is a "
                                        f"{message['ready']['device']}; give --restart to tune this device")
                    worker.send(request)
                elif "verified" in message:
                    chosen = dict((task, variant) for task, variant in message["verified"])
                    return [(task, want, chosen[task]) for task, want in expectations if chosen[task] != want]
                elif "error" in message or "exited" in message:
                    raise TaotError(f"checking the table's choices: {message.get('error') or 'the worker exited'}")
        except queue.Empty:
            raise TaotError("checking the table's choices: the worker did not answer") from None
        finally:
            worker.unit = None

    # ---- scheduling ----

    def _next_unit(self, worker):
        """The next unit for a free worker, first of: a final comparison of a key it is home to (or of a
        key without a home: listed by the run resumed); a chunk of the key it holds; listing a key nobody
        has listed (it becomes the key's home); a chunk of the key with the most candidates left."""
        for task in list(self.pending):
            plan = self.plans[task]
            if plan.remaining is not None and not plan.remaining and not plan.sent and not plan.final_sent:
                leaders = self._leaders(task)
                if len(leaders) <= 1:
                    self._end(task)
                elif self._home(plan) in (worker, None):
                    plan.final_sent, plan.home = True, worker
                    return {"final": task, "leaders": leaders, "rounds": FINAL_ROUNDS}
        held = self.holding.get(worker)
        if held in self.pending and self.plans[held].remaining:
            return self._chunk(worker, held)
        for task in self.pending:  # listed by the run resumed, and nobody's yet
            plan = self.plans[task]
            if plan.remaining and self._home(plan) is None:
                plan.home = worker
                return self._chunk(worker, task)
        for task in self.pending:
            plan = self.plans[task]
            if plan.remaining is None and not plan.begin_sent:
                plan.begin_sent, plan.home = True, worker
                return {"begin": task, "skip": sorted(self.journal.tasks.get(task, {}).get("results", {}))}
        shared = max((task for task in self.pending if self.plans[task].remaining),
                     key=lambda task: len(self.plans[task].remaining), default=None)
        return None if shared is None else self._chunk(worker, shared)

    def _home(self, plan):
        """The worker a key's final comparison waits for: the one that listed it, unless that one was
        left out since (another device); None: any."""
        return None if plan.home in self.skipped else plan.home

    def _chunk(self, worker, task):
        """A measure unit of the task's next candidates: CHUNK at most, and, once no key is left to list,
        a fair share of what is left among the workers free now (the ready ones on the device tuned)."""
        plan = self.plans[task]
        unlisted = any(self.plans[t].remaining is None and not self.plans[t].begin_sent for t in self.pending)
        free = 1 if unlisted else sum(1 for other in self.workers if other.unit is None and other in self.ready
                                      and other not in self.skipped)
        size = max(1, min(CHUNK, -(-len(plan.remaining) // max(1, free))))
        chunk, plan.remaining = plan.remaining[:size], plan.remaining[size:]
        plan.sent.update(chunk)
        return {"measure": task, "candidates": chunk, "best": self._best_on(self._gpu_of(worker), task)}

    def _gpu_of(self, worker):
        """What the journal records as the GPU of `worker`'s results: the GPU's UUID where its worker said
        it, so that a run resumed under another CUDA_VISIBLE_DEVICES keeps each GPU's medians apart;
        else the worker's GPU as --gpus or the cluster names it."""
        return self.gpu_ids.get(worker, worker.gpu)

    def _timed_per_gpu(self, task):
        """{GPU: the key's candidates timed in full there, fastest first}; results of a journal that did
        not record the GPU count as one GPU's."""
        per_gpu = {}
        for result in self.journal.tasks[task]["results"].values():
            if result["status"] == "ok":
                per_gpu.setdefault(result.get("gpu"), []).append(result)
        return {gpu: sorted(timed, key=lambda r: r["median_ms"]) for gpu, timed in per_gpu.items()}

    def _best_on(self, gpu, task):
        """The pruning bound a chunk for `gpu` carries: the key's best full median timed on that GPU, else
        (none yet there) on any, else None."""
        per_gpu = self._timed_per_gpu(task)
        timed = per_gpu.get(gpu) or min(per_gpu.values(), key=lambda t: t[0]["median_ms"], default=None)
        return timed[0]["median_ms"] if timed else None

    def _leaders(self, task):
        """Each GPU's candidates within LEADER_SPAN of that GPU's best, taken from the GPUs in turn (each
        one's best, then each one's second, ...; GPUs in a fixed order), at most MAX_LEADERS or one per
        GPU. A GPU whose best is more than OTHER_GPU_SPAN x another GPU's timed none of the leading
        candidates (its chunks held slow ones) and gives none."""
        per_gpu = self._timed_per_gpu(task)
        fastest = min((timed[0]["median_ms"] for timed in per_gpu.values()), default=None)
        ranked = [[r["result"] for r in timed if r["median_ms"] <= timed[0]["median_ms"] * LEADER_SPAN]
                  for gpu, timed in sorted(per_gpu.items(), key=lambda item: str(item[0]))
                  if timed[0]["median_ms"] <= fastest * OTHER_GPU_SPAN]
        in_turn = [ids[rank] for rank in range(max(map(len, ranked), default=0)) for ids in ranked if rank < len(ids)]
        return in_turn[:max(MAX_LEADERS, len(ranked))]

    def _assign(self, worker):
        worker.unit = self._next_unit(worker)
        if worker.unit is not None:
            self.holding[worker] = next(worker.unit[kind] for kind in ("begin", "measure", "final") if kind in worker.unit)
            worker.sent_at = time.monotonic()
            worker.send(worker.unit)

    def _unit_done(self, worker, message):
        """Accounts a unit's last answer to its worker's usage."""
        use = self.usage[worker]
        use.busy_s += time.monotonic() - worker.sent_at
        use.setup_s += message.get("setup_s", 0.0)

    def _assign_idle(self, workers, ready):
        for worker in workers:
            if worker in ready and worker.unit is None and worker not in self.skipped and not self.failure:
                self._assign(worker)

    def _end(self, task):
        self.journal.write({"task": task, "end": True})
        self.pending.remove(task)
        self._progress(task, final=True)

    def _loop(self, workers, messages):
        ready = self.ready
        while (self.pending or any(w.unit is not None for w in workers) or len(ready) < len(workers)) \
                and not self.failure:
            try:
                worker, process, message = messages.get(timeout=1.0)
            except queue.Empty:
                self._check_hangs(workers)
                continue
            if process is not worker.process:
                continue  # from a process already replaced
            if "ready" in message:
                if message["ready"].get("gpu_id") is not None:
                    self.gpu_ids[worker] = message["ready"]["gpu_id"]
                self._ready(worker, message["ready"]["device"], workers, message["ready"].get("startup_s"))
                ready.add(worker)
            elif "begin" in message:
                task = message["begin"]
                self.journal.write({"task": task, "begin": True, "key": message["key"],
                                    "shape": dict(self.shapes[task]), "candidates": message["candidates"]})
                filtered = message.get("filtered", {})
                done = set(self.journal.tasks[task]["results"]) | set(filtered)
                self.plans[task].remaining = [c["id"] for c in message["candidates"] if c["id"] not in done]
                for candidate, why in filtered.items():
                    self._record({"task": task, "result": candidate, "status": "filtered", "detail": why,
                                  "gpu": self._gpu_of(worker)})
                self._unit_done(worker, message)
                worker.unit = worker.running = None
            elif "start" in message:
                worker.running, worker.started_at = (message["task"], message["start"]), time.monotonic()
            elif "result" in message:
                self._record(dict(message, gpu=self._gpu_of(worker)))
                if message["status"] != "filtered":
                    self.usage[worker].candidates += 1
                worker.running = None
            elif "measured" in message:
                self._unit_done(worker, message)
                worker.unit = worker.running = None
            elif "final" in message:
                self._unit_done(worker, message)
                self.usage[worker].finals += 1
                self._final(message["final"], message["times"], self._gpu_of(worker))
                worker.unit = worker.running = None  # (its rounds' last start has no result of its own)
            elif "error" in message:
                where = self._unit_text(worker)
                if not message.get("fatal") or worker.unit is None:
                    self.failure = f"GPU {worker.gpu}, {where}: {message['error']}"
                # fatal: the worker exits; its exit restarts it and returns its unit's work
            elif "exited" in message:
                self._worker_exited(worker, message["exited"], ready)
            self._assign_idle(workers, ready)

    def _ready(self, worker, device, workers, startup_s=None):
        wanted = self.device or self.journal.device
        if wanted is not None and device != wanted and self.options.other_devices == "skip":
            self.skipped.add(worker)
            worker.stop()
            self.say(f"GPU {worker.gpu} is a {device}, not a {wanted}: not used (a tuned table is for one kind "
                     f"of device; tune it with --device '{device}' into another folder)")
            if len(self.skipped) == len(workers):
                self.failure = f"no GPU is a {wanted}"
            return
        if self.journal.device is not None and device != self.journal.device:
            self.failure = (f"{self.journal.path}: measured on a {self.journal.device}; GPU {worker.gpu} is a "
                            f"{device}; give --restart to tune this device")
        elif self.device is None or (device == self.device and self.journal.device is None):
            self.device = device
            if self.journal.device is None:
                self.journal.write({"device": device})
        elif device != self.device:
            self.failure = (f"GPU {worker.gpu} is a {device}, GPU {workers[0].gpu} a {self.device}: a tuned "
                            f"table is for one kind of device; give --gpus of one kind")
        if not self.failure:
            steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in (startup_s or {}).items())
            self.say(f"GPU {worker.gpu} ({device}): worker ready in {time.monotonic() - worker.launched_at:.1f} s"
                     + (f" ({steps})" if steps else ""))

    def _unit_text(self, worker):
        unit = worker.unit
        if not unit or "verify" in unit:
            return "worker"
        task = next(unit[kind] for kind in ("begin", "measure", "final") if kind in unit)
        return f"task {task} ({dict(self.shapes[task])})"

    def _record(self, message):
        task = message["task"]
        entry = {"task": task, "result": message["result"], "status": message["status"]}
        for name in ("median_ms", "samples", "detail", "gpu"):
            if name in message:
                entry[name] = message[name]
        self.journal.write(entry)
        plan = self.plans.get(task)
        if plan is not None:
            plan.sent.discard(message["result"])
            if plan.remaining and message["result"] in plan.remaining:
                plan.remaining.remove(message["result"])
        if message["status"] != "filtered":
            self.measured_now += 1
        self._progress(task)

    def _final(self, task, times, gpu):
        chosen = min(times, key=lambda candidate: (times[candidate], candidate))
        self.journal.write({"task": task, "final": times, "chosen": chosen, "gpu": gpu})
        self._end(task)

    def _worker_exited(self, worker, code, ready):
        unit, worker.unit = worker.unit, None
        if unit is None and not self.pending:
            return  # asked to quit, or nothing left for it
        if worker.running is not None:
            task, candidate = worker.running
            self._record({"task": task, "result": candidate, "status": "crashed", "gpu": self._gpu_of(worker),
                          "detail": f"the worker exited with status {code} while running it"})
            worker.running = None
        if unit is not None:  # its unanswered work goes back
            if "begin" in unit:
                self.plans[unit["begin"]].begin_sent = False
            elif "measure" in unit:
                plan = self.plans[unit["measure"]]
                back = [c for c in unit["candidates"] if c in plan.sent]
                plan.sent.difference_update(back)
                plan.remaining = back + (plan.remaining or [])
            elif "final" in unit:
                self.plans[unit["final"]].final_sent = False
        worker.restarts += 1
        if worker.restarts > self.options.max_restarts:
            self.failure = f"GPU {worker.gpu}: its worker died {worker.restarts} times; last exit status {code}"
            return
        self.say(f"GPU {worker.gpu}: worker exited (status {code}); restarting it")
        ready.discard(worker)
        worker.start()

    def _check_hangs(self, workers):
        now = time.monotonic()
        for worker in workers:
            if worker.running is not None and now - worker.started_at > self.options.candidate_timeout:
                task, candidate = worker.running
                self._record({"task": task, "result": candidate, "status": "hung", "gpu": self._gpu_of(worker),
                              "detail": f"no answer within {self.options.candidate_timeout:g} s; worker killed"})
                worker.running = None
                worker.kill()  # its exit restarts it

    def _progress(self, task, final=False):
        now = time.monotonic()
        if not final and now - self.last_progress < PROGRESS_SECONDS:
            return  # a line every PROGRESS_SECONDS, and at each key's end
        self.last_progress = now
        done = self.total - len(self.pending)
        state = self.journal.tasks.get(task, {})
        count, results = len(state.get("candidates", {})), state.get("results", {})
        elapsed = now - self.started
        left = ""
        if self.measured_now:
            rate = self.measured_now / elapsed
            left = f", about {self._candidates_left() / rate:.0f} s left ({rate:.0f} candidates/s)"
        best = best_result(state)
        best_text = f", best {best['median_ms'] * 1e3:.2f} us ({best['result']})" if best else ""
        self.say(f"[{done}/{self.total} keys] key {state.get('key')}: {len(results)}/{count} candidates{best_text}; "
                 f"{elapsed:.0f} s elapsed{left}")

    def _candidates_left(self):
        """Candidates not yet measured: of listed keys, their own; of the others, the listed keys' mean."""
        listed = [len(self.journal.tasks[t]["candidates"]) for t in self.journal.tasks
                  if self.journal.tasks[t]["key"] is not None]
        mean = sum(listed) / len(listed) if listed else 0
        left = 0
        for task in self.pending:
            plan = self.plans[task]
            left += mean if plan.remaining is None else len(plan.remaining) + len(plan.sent)
        return left


def best_result(state):
    """The key's choice with its time: the final comparison's fastest when there was one, else the
    fastest full median (None when no candidate passed)."""
    results = state.get("results", {})
    chosen = state.get("chosen")
    if chosen is not None and results.get(chosen, {}).get("status") == "ok":
        return dict(results[chosen], median_ms=state["final"][chosen])
    timed = [r for r in results.values() if r["status"] == "ok"]
    return min(timed, key=lambda r: r["median_ms"]) if timed else None


# ---------------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------------

def tuned_fields(journal):
    """The config fields a table gives: those whose value differs among some task's candidates (the
    others follow from the arguments, the heuristics or the default)."""
    fields = []
    for state in journal.tasks.values():
        configs = list(state["candidates"].values())
        for name in (configs[0] if configs else {}):
            if len({json.dumps(c.get(name)) for c in configs}) > 1 and name not in fields:
                fields.append(name)
    return fields


def table_entries(journal, fields):
    """(entries, unresolved): per tuned key, the best candidate's config restricted to `fields`, with
    its measurements; tasks where no candidate passed are listed in `unresolved`."""
    entries, unresolved, seen = [], [], {}
    for task in sorted(t for t in journal.tasks if journal.tasks[t]["done"]):
        state = journal.tasks[task]
        best = best_result(state)
        if best is None:
            unresolved.append((task, state["key"]))
            continue
        key = tuple(state["key"])
        if key in seen:
            continue  # two shapes with one key: the first tuned shape decides
        seen[key] = task
        config = state["candidates"][best["result"]]
        counts = {status: 0 for status in STATUSES}
        for result in state["results"].values():
            counts[result["status"]] += 1
        entries.append({"key": list(key), "config": {name: config[name] for name in fields if name in config},
                        "measured": {"median_ms": best["median_ms"], "variant": best["result"],
                                     "candidates": len(state["candidates"]),
                                     **{status: count for status, count in counts.items() if count}}})
    entries.sort(key=lambda entry: entry["key"])
    return entries, unresolved


def taot_table(kernel, library, device, key_names, entries, settings):
    return {"schema": "taot.tuning", "schema_version": 1, "kernel": kernel, "library": library, "device": device,
            "match": "nearest", "key": list(key_names), "entries": entries,
            "measured": {"tool": "taot tune", "timing": settings["full"], "quick": settings["quick"],
                         "prune_ratio": settings["prune_ratio"]}}


def write_tables(output, kernel, library, device, key_names, journal, settings, vllm_path=None):
    """Writes OUTPUT/<kernel>.json (taot's format) and, for a one-argument key, vLLM's JSON; returns
    (paths, entries, unresolved)."""
    fields = tuned_fields(journal)
    entries, unresolved = table_entries(journal, fields)
    if not entries:
        raise TaotError("no key value has a candidate that passed: nothing to write (see the journal)")
    paths = []
    table_path = Path(output) / f"{kernel}.json"
    write_atomically(table_path, (json.dumps(taot_table(kernel, library, device, key_names, entries, settings),
                                             indent=1) + "\n").encode())
    paths.append(table_path)
    if len(key_names) == 1:
        vllm = {"triton_version": _triton_version()}
        vllm.update({str(entry["key"][0]): entry["config"] for entry in entries})
        vllm_path = Path(vllm_path) if vllm_path else Path(output) / f"{vllm_file_name(device)}"
        write_atomically(vllm_path, (json.dumps(vllm, indent=4) + "\n").encode())
        paths.append(vllm_path)
    return paths, entries, unresolved


def vllm_file_name(device):
    """vLLM's device part of a tuned file's name (spaces as underscores); E and N are the caller's to add."""
    return f"device_name={device.replace(' ', '_')}.json"


def _triton_version():
    try:
        from importlib.metadata import version
        return version("triton")
    except Exception:  # no Triton installed: the key is informational
        return None
