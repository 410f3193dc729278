# `taot tune --cluster ADDRESS`: the tune workers as Ray actors, one per GPU of the cluster (Ray gives
# each actor one GPU and sets its CUDA_VISIBLE_DEVICES), in place of one process per local GPU. The
# coordinator (tuner.Coordinator) is the same: a RayWorker answers its requests as tune_worker's
# protocol does, one candidate per actor call, so that a candidate that kills its actor is known.
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from ..compile.cluster import Cluster
from ..errors import Problem, TaotError
from .tune_worker import Screening, Session


class TuneActor:
    """Runs on a node with one GPU: the backend and a tune_worker Session over it."""

    def __init__(self, settings):
        from .tuner import load_shapes, make_backend
        self.shapes = load_shapes(settings)
        self.backend = make_backend(settings)
        self.out = []
        self.session = Session(self.backend, self.shapes,
                               Screening(settings["quick"], settings["full"], settings["prune_ratio"]), self.out.append)

    def ready(self):
        return {"device": self.backend.device_name, "gpu_id": getattr(self.backend, "gpu_id", None),
                "startup_s": getattr(self.backend, "startup_s", {}),
                "where": f"{socket.gethostname()} GPU {os.environ.get('CUDA_VISIBLE_DEVICES', '?')}"}

    def handle(self, request):
        """The messages tune_worker would print for `request`."""
        self.out.clear()
        if "verify" in request:  # the table was written on the coordinator's machine: its text came along
            with tempfile.TemporaryDirectory(prefix="taot-tune-verify-") as folder:
                table = Path(folder) / Path(request["verify"]).name
                table.write_text(request["table_text"])
                self.session.answer(dict(request, verify=str(table)))
        else:
            self.session.answer(request)
        return list(self.out)


class RayWorker:
    """A tune worker on the cluster with _Worker's interface: `messages` gets (self, incarnation,
    message) as a worker process's lines would come; `process` names the actor's incarnation."""

    def __init__(self, gpu, settings, messages, ray):
        self.gpu, self.settings, self.messages, self.ray = gpu, settings, messages, ray
        self.restarts, self.unit, self.running = 0, None, None
        self.process = None
        self.start()

    def start(self):
        self.launched_at = time.monotonic()
        self.process = _Incarnation(self.ray.remote(num_gpus=1, max_restarts=0)(TuneActor).remote(self.settings))
        threading.Thread(target=self._run, args=(self.process, {"ready": True}), daemon=True).start()

    def send(self, request):
        if "verify" in request:
            request = dict(request, table_text=Path(request["verify"]).read_text())
        threading.Thread(target=self._run, args=(self.process, request), daemon=True).start()

    def _run(self, incarnation, request):
        """Answers `request` through the actor, posting each message; an actor that dies posts "exited"."""
        post = lambda message: self.messages.put((self, incarnation, message))  # noqa: E731
        actor = incarnation.actor
        try:
            with incarnation.lock:  # one request at a time, in order, as a worker process reads them
                if "ready" in request:
                    facts = self.ray.get(actor.ready.remote())
                    self.gpu = facts["where"]
                    post({"ready": {"device": facts["device"], "gpu_id": facts["gpu_id"], "startup_s": facts["startup_s"]}})
                elif "measure" in request:  # one call per candidate: a crash is the candidate's
                    best, setup_s = request.get("best"), 0.0
                    for candidate in request["candidates"]:
                        post({"task": request["measure"], "start": candidate})
                        messages = self.ray.get(actor.handle.remote(dict(request, candidates=[candidate], best=best)))
                        for message in messages:
                            if "measured" in message:
                                setup_s += message.get("setup_s", 0.0)
                                continue
                            if message.get("status") == "ok":
                                best = message["median_ms"] if best is None else min(best, message["median_ms"])
                            post(message)
                        if any(message.get("fatal") for message in messages):
                            raise _ContextLost("a fatal driver error")
                    post({"measured": request["measure"], "setup_s": setup_s})
                elif "quit" not in request:
                    messages = self.ray.get(actor.handle.remote(request))
                    for message in messages:
                        post(message)
                    if any(message.get("fatal") for message in messages):
                        raise _ContextLost("a fatal driver error")
        except Exception as error:  # the actor died (its node, a crash), failed, or lost its CUDA context:
            if not incarnation.ended:  # it ends, as a worker process would; the coordinator restarts it
                incarnation.ended = True
                try:
                    self.ray.kill(actor)  # (an actor left alive would keep its GPU from the next one)
                except Exception:
                    pass
                why = "its CUDA context was lost" if isinstance(error, _ContextLost) else type(error).__name__
                post({"exited": f"its actor ended ({why})"})

    def kill(self):
        self.ray.kill(self.process.actor)  # its requests under way fail: the exit is posted from there

    def stop(self):
        self.process.ended = True
        self.ray.kill(self.process.actor)


class _ContextLost(Problem):
    """The actor reported a fatal driver error: it is ended and started again, as a worker process exits."""


class _Incarnation:
    def __init__(self, actor):
        self.actor = actor
        self.lock = threading.Lock()
        self.ended = False

    def poll(self):
        return 1 if self.ended else None


def connect(address, notice):
    """The Ray connection and the number of GPUs the cluster declares."""
    cluster = Cluster.for_gpus(address, notice)
    gpus = int(cluster.ray.cluster_resources().get("GPU", 0))
    if gpus == 0:
        raise TaotError(f"--cluster {address}: the cluster has no GPUs (no node declares any)")
    return cluster, gpus
