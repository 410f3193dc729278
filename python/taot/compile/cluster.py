# Compile jobs as Ray tasks on a cluster (`taot compile/build --cluster ADDRESS`). Ray is optional
# (`pip install taot[ray]`) and imported only here. The build itself is unchanged: this machine
# plans the jobs, holds OUTDIR's lock, and writes every artifact folder; a node compiles a job into a
# folder of its own and returns the files, which are written here and checked against their record
# (inputs.json's hashes) before the job counts as done.
#
# Nodes: every alive node is asked, by a task pinned to it, for its Triton version; only nodes with
# this machine's are given jobs (the others are named), each job pinned to one of them in turn. A job
# whose node dies is given to another node; a job's result is written once, so nothing is doubled.
# Kernel sources are read where this machine reads them: the nodes must see the same paths (a shared
# filesystem, or the same checkout at the same place); a source that differs is the job's error.
import dataclasses
import socket
import tempfile
import time
from pathlib import Path

from . import artifacts
from . import jobs as job_module
from ..errors import TaotError
from ..fsutil import write_atomically

JOB_RETRIES = 3  # nodes a job may lose before the build gives up on it
NODE_DEATH_SECONDS = 5.0  # after a task's process dies: how long Ray may take to say its node is gone


@dataclasses.dataclass(frozen=True)
class NodeFacts:
    node_id: str
    name: str            # host name and the start of Ray's node id: how nodes are named to the user
    triton: str = None   # its Triton version, None when it has none
    cpus: int = 1


def _import_ray():
    try:
        import ray
    except ImportError:
        raise TaotError("--cluster needs Ray in this Python: pip install 'taot[ray]' (or pip install ray)") from None
    return ray


def _compile_remotely(job):
    """Runs on a node: compiles `job` into a folder of its own; (outcome, {file name: bytes})."""
    from ..triton_api import compiler as _  # noqa: F401  (Triton imported before the clock starts)
    with tempfile.TemporaryDirectory(prefix="taot-cluster-job-") as folder:
        outcome = job_module.run_job(dataclasses.replace(job, artifact_dir=folder))
        files = {} if outcome.error else {path.name: path.read_bytes() for path in Path(folder).iterdir()
                                          if path.is_file()}
    return outcome, files


def address_problem(address):
    """What is wrong with a --cluster value's form (None when it is auto, HOST:PORT or ray://HOST:PORT)."""
    if address == "auto":
        return None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "expected auto, HOST:PORT or ray://HOST:PORT"
    return None


def _check_reachable(address, seconds=5.0):
    """A HOST:PORT (or ray://HOST:PORT) that nothing answers at is said at once: Ray itself retries
    for minutes. "auto" is left to Ray, which says at once when this machine is in no cluster."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as error:
        raise TaotError(f"--cluster {address}: nothing answers at {host}:{port} ({error.strerror or error}); is the "
                        "Ray cluster up (ray status)?") from None


class Cluster:
    """A connection to a Ray cluster and the nodes compile jobs may run on."""

    def __init__(self, address, triton_version=None, notice=None):
        """Connects; with `triton_version`, also finds the nodes compile jobs may run on (`nodes`)."""
        self.ray = _import_ray()
        self.say = notice or (lambda line: None)
        _check_reachable(address)
        try:
            self.ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise TaotError(f"--cluster {address}: cannot connect to a Ray cluster there ({error})") from None
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        self._pinned = lambda node_id: NodeAffinitySchedulingStrategy(node_id, soft=False)
        self.nodes = []
        if triton_version is not None:
            self._find_compile_nodes(address, triton_version)

    @classmethod
    def for_gpus(cls, address, notice=None):
        """A connection for tune workers: Ray places them on the nodes' GPUs."""
        return cls(address, None, notice)

    def _find_compile_nodes(self, address, triton_version):
        say = self.say
        self.unreachable = []
        self.nodes, refused = self._usable_nodes(triton_version)
        for address_, node_id, error in self.unreachable:
            say(f"--cluster: node {address_} ({node_id}) cannot run taot's probe ({type(error).__name__}: "
                f"{str(error).strip().splitlines()[-1] if str(error).strip() else ''}): no compile jobs go there")
        for node in refused:
            say(f"--cluster: node {node.name} has "
                f"{'Triton ' + node.triton if node.triton else 'no Triton'}, this machine Triton {triton_version}: "
                "no compile jobs go there")
        if not self.nodes:
            raise TaotError(f"--cluster {address}: no node has Triton {triton_version} (this machine's)")
        say(f"--cluster {address}: compiling on {len(self.nodes)} node(s) "
            f"({', '.join(f'{node.name}, {node.cpus} CPUs' for node in self.nodes)})")

    def _usable_nodes(self, triton_version):
        from .node_probe import probe
        probe = self.ray.remote(num_cpus=0, max_retries=0)(probe)
        # (a node without CPUs for tasks, such as a head node started with --num-cpus 0, takes no jobs)
        alive = [node for node in self.ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= 1]
        answers = {node["NodeID"]: probe.options(scheduling_strategy=self._pinned(node["NodeID"])).remote()
                   for node in alive}
        usable, refused = [], []
        for node in alive:
            try:
                host, version = self.ray.get(answers[node["NodeID"]], timeout=120)
            except Exception as error:  # a node that cannot run taot's probe is not used
                self.unreachable.append((node["NodeManagerAddress"], node["NodeID"][:8], error))
                continue
            facts = NodeFacts(node["NodeID"], f"{host} ({node['NodeID'][:8]})", version,
                              int(node.get("Resources", {}).get("CPU", 1)))
            (usable if version == triton_version else refused).append(facts)
        return usable, refused

    def run(self, pending, progress=None, report=None):
        """Compiles `pending` jobs on the usable nodes, writing each result into its artifact folder.
        Returns the failed outcomes (after the first, no new job is given out). `report(done, total,
        outcome)` as the local pool calls it. Tasks still under way at Ctrl-C, or after a failure, end when
        close() disconnects (Ray ends a finished driver's tasks; ray.cancel(force=True) of tasks that were
        completing crashed Ray 2.60's driver, one run in about eight)."""
        ray = self.ray
        remote = ray.remote(num_cpus=1, max_retries=0)(_compile_remotely)
        nodes = list(self.nodes)
        losses = {}
        running = {}  # object ref -> (job, node)
        turn = 0

        def submit(job):
            """To the node with the fewest jobs per CPU (the first of those, in turn)."""
            nonlocal turn
            load = {node.node_id: 0 for node in nodes}
            for _, on in running.values():
                if on.node_id in load:
                    load[on.node_id] += 1
            order = nodes[turn % len(nodes):] + nodes[:turn % len(nodes)]
            node = min(order, key=lambda candidate: load[candidate.node_id] / candidate.cpus)
            turn += 1
            running[remote.options(scheduling_strategy=self._pinned(node.node_id)).remote(job)] = (job, node)

        failures, done = [], 0
        for job in pending:
            submit(job)
        while running:
            finished, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in finished:
                job, node = running.pop(ref)
                try:
                    outcome, files = ray.get(ref)
                except (ray.exceptions.RayTaskError,) as error:
                    outcome, files = job_module.Outcome(job.variant_id, job.target, 0.0,
                                                        f"on node {node.name}: {error}"), {}
                except Exception as error:  # the node or its worker died
                    if self._still_alive(node):  # the compile killed its process (a crash, out of memory)
                        outcome, files = job_module.Outcome(
                            job.variant_id, job.target, 0.0,
                            f"the compile process on node {node.name} died ({type(error).__name__}): a crash "
                            "inside Triton, MLIR or LLVM, or out of memory; build it here with -j 1 to see its "
                            "last output"), {}
                        done += 1
                        if report is not None:
                            report(done, len(pending), outcome)
                        failures.append(outcome)
                        continue
                    if node in nodes:  # the node is lost: another node compiles it
                        nodes.remove(node)
                        left = sum(1 for _, on in running.values() if on == node) + 1
                        self.say(f"--cluster: node {node.name} was lost; its {left} job(s) under way go to "
                                 f"{len(nodes)} other node(s)")
                    key = (job.variant_id, job.target)
                    losses[key] = losses.get(key, 0) + 1
                    if not nodes or losses[key] > JOB_RETRIES:
                        raise TaotError(f"{job.variant_id} ({job.target}): lost on {losses[key]} node(s), "
                                        f"last {node.name}: {type(error).__name__}: {error}") from None
                    submit(job)
                    continue
                if outcome.error is None:
                    outcome = self._write(job, outcome, files, node)
                done += 1
                if report is not None:
                    report(done, len(pending), outcome)
                if outcome.error is not None:
                    failures.append(outcome)
            if failures:
                running.clear()  # (their tasks end with the connection: close())
        return failures

    def _alive(self, node):
        return any(entry["NodeID"] == node.node_id and entry.get("Alive") for entry in self.ray.nodes())

    def _still_alive(self, node, seconds=NODE_DEATH_SECONDS):
        """Whether `node` is alive `seconds` after one of its tasks failed (Ray takes a moment to mark a
        lost node dead, and a task on it may fail first)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self._alive(node):
                return False
            time.sleep(0.25)
        return self._alive(node)

    @staticmethod
    def _write(job, outcome, files, node):
        """Writes a node's files into the job's folder, keeping the folder's other users, and checks them
        against their own record; a folder that does not check out is the job's error."""
        folder = Path(job.artifact_dir)
        folder.mkdir(parents=True, exist_ok=True)
        users = set(artifacts.clear(folder, job.inputs)) | {job.library}
        record = files.pop(artifacts.RECORD, None)
        for name, data in files.items():
            write_atomically(folder / name, data)
        if record is not None:
            artifacts.write_record_with_users(folder, record, users)
        reason = artifacts.stale_reason(folder, job.inputs, job.ir)
        if reason is not None:
            return dataclasses.replace(outcome, error=f"the files node {node.name} compiled do not check out here: "
                                                      f"{reason or 'no record'}")
        return outcome

    def close(self):
        self.ray.shutdown()


def connect(address, notice=None):
    """A Cluster at `address` ("auto": the one this machine belongs to) for this machine's Triton."""
    from ..triton_api import VERSION
    started = time.perf_counter()
    cluster = Cluster(address, VERSION, notice)
    if notice is not None:
        notice(f"--cluster: connected in {time.perf_counter() - started:.1f} s")
    return cluster
