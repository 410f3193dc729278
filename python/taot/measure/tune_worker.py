# One `taot tune` worker: a process bound to one GPU (the coordinator sets CUDA_VISIBLE_DEVICES) that
# runs the units of work it is sent and reports each candidate as it goes, so that a candidate that
# kills or hangs the process is known to the coordinator (python/taot/measure/tuner.py).
#
# Protocol, one JSON object per line. The coordinator sends
#   {"begin": TASK, "skip": [ids]}       list the task's candidates (ids in skip already have results)
#   {"measure": TASK, "candidates": [ids], "best": MS or null}
#                                        gate and time these candidates; `best`: the task's best full
#                                        median so far on this GPU (else on any), for early stopping
#   {"final": TASK, "leaders": [ids], "rounds": R}
#                                        time the leading candidates again, R interleaved rounds
#   {"verify": TABLE_PATH, "tasks": [[TASK, best id], ...]}  or  {"quit": true}
# The worker answers:
#   {"ready": {"device": NAME, "gpu_id": UUID or null, "startup_s": {step: S}}}
#                                                         once, after loading (the steps' seconds)
#   {"begin": TASK, "key": [...], "candidates": [{"id", "config"}, ...],
#    "filtered": {id: why, ...}, "setup_s": S}            listed; `filtered`: those the device cannot run
#                                                         (the coordinator records them), skip left out
#   {"task": TASK, "start": ID}                           before it runs a candidate
#   {"task": TASK, "result": ID, "status": S, "median_ms": T, "samples": N, "detail": TEXT}
#   {"measured": TASK, "setup_s": S}                      the measure unit is done
#   {"final": TASK, "times": {id: median ms over the rounds}, "setup_s": S}
#   {"verified": [[TASK, chosen id], ...]}
#   {"error": TEXT}                                       a problem with the task itself (bad make_args)
# S is one of tuner.STATUSES; setup_s: the seconds the unit spent entering its task (making its shape's
# arguments and reference; 0 when the backend still held them). Tasks are tuning shapes by index into
# the bench file's tune shapes.
import argparse
import json
import math
import signal
import sys
import time

from ..errors import TaotError
from .stats import median


class Screening:
    """Early stopping: every candidate is first timed briefly (`quick`); one whose quick median is
    more than `prune_ratio` times the best full median so far is not timed in full. A `prune_ratio` of 0
    prunes nothing, and nothing is timed briefly first."""

    def __init__(self, quick, full, prune_ratio):
        self.quick, self.full, self.prune_ratio = quick, full, prune_ratio


class Session:
    """The worker's side of the protocol: the task whose arguments the backend holds (a unit of another
    task begins that one first, silently) and its candidates by id."""

    def __init__(self, backend, shapes, screening, emit):
        self.backend, self.shapes, self.screening, self.emit = backend, shapes, screening, emit
        self.task = None
        self.candidates = {}
        self.filtered = []
        self.setup_s = 0.0  # of the unit being answered

    def _enter(self, task):
        if task != self.task:
            started = time.perf_counter()
            key, accepted, filtered = self.backend.begin(self.shapes[task])
            self.setup_s += time.perf_counter() - started
            self.task, self.key, self.filtered = task, key, filtered
            self.candidates = {candidate.id: candidate for candidate in accepted}

    def begin(self, task, skip):
        self._enter(task)
        listed = list(self.candidates.values()) + self.filtered
        reasons = zip(self.filtered, self.backend.filter_reasons(self.filtered))
        self.emit({"begin": task, "key": list(self.key),
                   "candidates": [{"id": c.id, "config": c.config} for c in listed],
                   "filtered": {c.id: reason for c, reason in reasons if c.id not in skip}, "setup_s": self.setup_s})

    def measure(self, task, ids, best):
        self._enter(task)
        best = math.inf if best is None else best
        filtered = dict(zip((c.id for c in self.filtered), self.backend.filter_reasons(self.filtered)))
        for candidate_id in ids:
            if candidate_id in filtered:  # (listed as filtered by its begin; said again if sent)
                self.emit({"task": task, "result": candidate_id, "status": "filtered", "detail": filtered[candidate_id]})
                continue
            candidate = self.candidates[candidate_id]
            self.emit({"task": task, "start": candidate.id})
            try:
                outcome = _measure(self.backend, candidate, self.screening, best)
            except (ValueError, TypeError) as error:  # the launch was refused: this candidate only
                outcome = {"status": "error", "detail": f"{type(error).__name__}: {error}"}
            if outcome["status"] == "ok":
                best = min(best, outcome["median_ms"])
            self.emit({"task": task, "result": candidate.id, **outcome})
        self.emit({"measured": task, "setup_s": self.setup_s})

    def answer(self, request):
        """Answers one request (not quit) with its messages; False when the CUDA context was lost (the
        error is said, and the worker must end), True otherwise."""
        self.setup_s = 0.0
        try:
            if "verify" in request:
                try:
                    self.backend.load_table(request["verify"])
                    self.emit({"verified": [[task, self.backend.choose(self.shapes[task])]
                                            for task, _ in request["tasks"]]})
                except Exception as error:  # any failure of the check is reported, not a crash
                    self.emit({"error": f"{type(error).__name__}: {error}"})
            elif "begin" in request:
                self.begin(request["begin"], set(request.get("skip", ())))
            elif "measure" in request:
                self.measure(request["measure"], request["candidates"], request.get("best"))
            elif "final" in request:
                self.final(request["final"], request["leaders"], request["rounds"])
        except self.backend.FatalError as error:
            self.emit({"error": str(error), "fatal": True})
            return False
        except TaotError as error:
            self.emit({"error": str(error)})
        return True

    def final(self, task, ids, rounds):
        """Each leader timed once per round, in turn, so that a clock or temperature change between
        rounds reaches them all alike; a leader's time is the median of its round medians."""
        self._enter(task)
        medians = {candidate_id: [] for candidate_id in ids}
        for _ in range(rounds):
            for candidate_id in ids:
                self.emit({"task": task, "start": candidate_id})
                medians[candidate_id].append(median(self.backend.time(self.candidates[candidate_id],
                                                                      self.screening.full)))
        self.emit({"final": task, "times": {candidate_id: median(times) for candidate_id, times in medians.items()},
                   "setup_s": self.setup_s})


def _measure(backend, candidate, screening, best):
    """One candidate's outcome (without its id): the gate, the quick timing, the full one."""
    problems = backend.gate(candidate)
    if problems:
        return {"status": "wrong", "detail": "; ".join(problems)}
    if screening.prune_ratio:
        quick = median(backend.time(candidate, screening.quick))
        if quick > best * screening.prune_ratio:
            return {"status": "pruned", "median_ms": quick,
                    "detail": f"quick median {quick:.5g} ms > {screening.prune_ratio:g} x best {best:.5g} ms"}
    samples = backend.time(candidate, screening.full)
    return {"status": "ok", "median_ms": median(samples), "samples": len(samples)}


def serve(backend, shapes, screening, read=sys.stdin, write=sys.stdout):
    def emit(message):
        write.write(json.dumps(message) + "\n")
        write.flush()

    session = Session(backend, shapes, screening, emit)
    emit({"ready": {"device": backend.device_name, "gpu_id": getattr(backend, "gpu_id", None),
                    "startup_s": getattr(backend, "startup_s", {})}})
    for line in read:
        request = json.loads(line)
        if request.get("quit"):
            return 0
        if not session.answer(request):
            return 3  # the context is broken: the coordinator restarts us
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m taot.measure.tune_worker")
    parser.add_argument("--settings", required=True, help="the coordinator's settings, JSON")
    arguments = parser.parse_args(argv)
    # Ctrl-C reaches the whole process group: the coordinator ends its workers itself, and keeps the
    # journal; a worker's own KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settings = json.loads(arguments.settings)
    from .tuner import make_backend, load_shapes

    try:
        shapes = load_shapes(settings)
        backend = make_backend(settings)
    except TaotError as error:
        print(json.dumps({"error": str(error), "fatal": True}), flush=True)
        return 1
    screening = Screening(settings["quick"], settings["full"], settings["prune_ratio"])
    return serve(backend, shapes, screening)


if __name__ == "__main__":
    sys.exit(main())
