# One `taot tune` worker: a process bound to one GPU (the coordinator sets CUDA_VISIBLE_DEVICES) that
# tunes the tasks it is sent, one tuning-key value at a time, and reports each candidate as it goes,
# so that a candidate that kills or hangs the process is known to the coordinator (python/taot/measure/tuner.py).
#
# Protocol, one JSON object per line. The coordinator sends {"task": INDEX, "skip": [candidate ids]},
# {"verify": TABLE_PATH, "tasks": [[INDEX, best id], ...]} or {"quit": true}. The worker answers:
#   {"ready": {"device": NAME}}                          once, after loading
#   {"begin": INDEX, "key": [...], "candidates": [{"id", "config"}, ...]}
#   {"start": ID}                                         before it runs a candidate
#   {"result": ID, "status": S, "median_ms": T, "samples": N, "detail": TEXT}
#   {"end": INDEX}
#   {"verified": [[INDEX, chosen id], ...]}
#   {"error": TEXT}                                       a problem with the task itself (bad make_args)
# S is one of tuner.STATUSES. Tasks are tuning shapes by index into the bench file's tune shapes.
import argparse
import json
import math
import sys

from ..errors import TaotError
from .stats import median


class Screening:
    """Early stopping: every candidate is first timed briefly (`quick`); one whose quick median is
    more than `prune_ratio` times the best full median so far is not timed in full."""

    def __init__(self, quick, full, prune_ratio):
        self.quick, self.full, self.prune_ratio = quick, full, prune_ratio


def run_task(backend, task, shape, skip, screening, emit):
    """Tunes one shape: begin, then per candidate start/result, then end."""
    key, candidates, filtered = backend.begin(shape)
    emit({"begin": task, "key": list(key),
          "candidates": [{"id": c.id, "config": c.config} for c in candidates + filtered]})
    for candidate, reason in zip(filtered, backend.filter_reasons(filtered)):
        if candidate.id not in skip:
            emit({"result": candidate.id, "status": "filtered", "detail": reason})
    best = math.inf
    for candidate in candidates:
        if candidate.id in skip:
            continue
        emit({"start": candidate.id})
        try:
            outcome = _measure(backend, candidate, screening, best)
        except (ValueError, TypeError) as error:  # the launch was refused: this candidate only
            outcome = {"status": "error", "detail": f"{type(error).__name__}: {error}"}
        if outcome["status"] == "ok":
            best = min(best, outcome["median_ms"])
        emit({"result": candidate.id, **outcome})
    emit({"end": task})


def _measure(backend, candidate, screening, best):
    """One candidate's outcome (without its id): the gate, the quick timing, the full one."""
    problems = backend.gate(candidate)
    if problems:
        return {"status": "wrong", "detail": "; ".join(problems)}
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

    emit({"ready": {"device": backend.device_name}})
    for line in read:
        request = json.loads(line)
        if request.get("quit"):
            return 0
        if "verify" in request:
            try:
                backend.load_table(request["verify"])
                emit({"verified": [[task, backend.choose(shapes[task])] for task, _ in request["tasks"]]})
            except Exception as error:  # any failure of the check is reported, not a crash
                emit({"error": f"{type(error).__name__}: {error}"})
            continue
        task = request["task"]
        try:
            run_task(backend, task, shapes[task], set(request.get("skip", ())), screening, emit)
        except backend.FatalError as error:  # the context is broken: report and let the coordinator restart us
            emit({"error": str(error), "fatal": True})
            return 3
        except TaotError as error:
            emit({"error": str(error)})
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m taot.measure.tune_worker")
    parser.add_argument("--settings", required=True, help="the coordinator's settings, JSON")
    arguments = parser.parse_args(argv)
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
