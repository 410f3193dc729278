"""A measuring backend for `taot tune --backend`, for tests of the tuner's bookkeeping without a GPU.
Its world is the JSON file named by $FAKE_TUNE_PLAN ($FAKE_TUNE_DEVICE, where set, names the device):
  {"device": NAME, "candidates": [{"id", "config"}], "times": {"<M>": {id: ms}},
   "wrong": [[M, id]], "filtered": [[M, id]], "crash": [[M, id]], "hang": [[M, id]], "fatal": [[M, id]],
   "refused": [[M, id]], "sleep_ms": MS per timing call, "wait_for_workers": N (begin waits until N
   workers have started)}
Every timing call is appended to $FAKE_TUNE_LOG as "M id DEVICE quick|full" (quick: rep_ms below 10;
DEVICE: the worker's CUDA_VISIBLE_DEVICES or "unset", then $FAKE_TUNE_NODE), and each worker's device to
$FAKE_TUNE_LOG.devices as it starts."""
import json
import os
import time


class FakeBackend:
    def __init__(self, settings):
        self.plan = json.loads(open(os.environ["FAKE_TUNE_PLAN"]).read())
        self.device_name = os.environ.get("FAKE_TUNE_DEVICE") or self.plan.get("device", "Fake GPU")
        self.candidates = self.plan["candidates"]
        self.table = None
        self.startup_s = {"reading the plan": 0.0}  # (RealBackend's steps: importing torch, starting CUDA, ...)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        self.gpu_id = None if visible is None else f"GPU-fake-{visible}"  # (RealBackend's: the GPU's UUID)
        with open(os.environ["FAKE_TUNE_LOG"] + ".devices", "a") as log:
            log.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset") + "\n")

    def _listed(self, name, m, candidate_id):
        return [m, candidate_id] in self.plan.get(name, [])

    def begin(self, shape):
        from taot.measure.tuner import Candidate

        deadline = time.monotonic() + 30
        while len(open(os.environ["FAKE_TUNE_LOG"] + ".devices").read().split()) < self.plan.get("wait_for_workers", 0):
            assert time.monotonic() < deadline, "the other workers did not start within 30 s"
            time.sleep(0.01)
        self.m = shape["M"]
        every = [Candidate(c["id"], c["config"], index) for index, c in enumerate(self.candidates)]
        filtered = [c for c in every if self._listed("filtered", self.m, c.id)]
        return [self.m], [c for c in every if c not in filtered], filtered

    def filter_reasons(self, filtered):
        return ["needs 300000 bytes of shared memory" for _ in filtered]

    def gate(self, candidate):
        if self._listed("crash", self.m, candidate.id):
            os._exit(9)
        if self._listed("hang", self.m, candidate.id):
            time.sleep(3600)
        if self._listed("fatal", self.m, candidate.id):
            raise self.FatalError("CUDA_ERROR_ILLEGAL_ADDRESS")
        if self._listed("refused", self.m, candidate.id):
            raise ValueError("fused_moe_kernel: variant 3 does not accept BLOCK_SIZE_M=256 here")
        if self._listed("wrong", self.m, candidate.id):
            return ["out: 3 of 64 elements differ"]
        return []

    def time(self, candidate, timing):
        device = os.environ.get("CUDA_VISIBLE_DEVICES", "unset") + os.environ.get("FAKE_TUNE_NODE", "")
        with open(os.environ["FAKE_TUNE_LOG"], "a") as log:
            log.write(f"{self.m} {candidate.id} {device} {'quick' if timing['rep_ms'] < 10 else 'full'}\n")
        time.sleep(self.plan.get("sleep_ms", 0) / 1000)
        ms = self.plan["times"][str(self.m)][candidate.id]
        return [ms * 1.01, ms, ms * 0.99]

    def load_table(self, path):
        self.table = json.loads(open(path).read())

    def choose(self, shape):
        entries = self.table["entries"]
        entry = min(entries, key=lambda e: (abs(e["key"][0] - shape["M"]), e["key"][0]))
        for candidate in self.candidates:
            if all(candidate["config"].get(k) == v for k, v in entry["config"].items()):
                return candidate["id"]
        return None


BACKEND = FakeBackend
