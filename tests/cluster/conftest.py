"""A Ray cluster of several nodes on this machine (Ray's own ray.cluster_utils.Cluster) for the tests of
`taot compile/build --cluster`, and the taot binary they run. Every node's worker processes import
taot from this checkout (PYTHONPATH, set before the nodes start: they inherit it)."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
sys.path.insert(0, str(REPO / "python"))

ray_cluster_utils = pytest.importorskip("ray.cluster_utils")


@pytest.fixture(scope="session")
def taot_bin():
    path = Path(os.environ.get("TAOT_BIN", REPO / "build" / "tools" / "taot" / "taot"))
    if not path.exists():
        pytest.fail(f"the taot binary is not built at {path} (set TAOT_BIN or build first)")
    return path


@pytest.fixture
def cluster(tmp_path):
    """A head node that runs no jobs (0 CPUs) and two nodes of one CPU each; `cluster.other_triton()`
    adds a node whose Python has another Triton (a stand-in package first on its PYTHONPATH)."""
    made = ray_cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    made.workers = [made.add_node(num_cpus=1) for _ in range(2)]

    def other_triton():
        package = tmp_path / "other_triton" / "triton"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text('__version__ = "3.0.0"\n')
        return made.add_node(num_cpus=1, env_vars={"PYTHONPATH": f"{package.parent}{os.pathsep}{os.environ['PYTHONPATH']}"})

    made.other_triton = other_triton
    made.wait_for_nodes()
    yield made
    made.shutdown()
