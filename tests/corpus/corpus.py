"""Where the corpus's pieces are: its specs (one per project, each kernel named by module), the
projects' installed packages (build/corpus-site, made by scripts/corpus_env.sh; $TAOT_CORPUS_SITE
names another folder) and the Python that imports them with torch (build/torch-env, made by
scripts/torch_env.sh; $TAOT_CORPUS_PYTHON names another)."""
import os
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SPECS = sorted(HERE.glob("*.toml"))


def site():
    """The folder the projects are installed in."""
    return Path(os.environ.get("TAOT_CORPUS_SITE") or REPO / "build" / "corpus-site")


def torch_python():
    """The interpreter taot's front end imports the projects with (they import torch)."""
    return Path(os.environ.get("TAOT_CORPUS_PYTHON") or REPO / "build" / "torch-env" / "bin" / "python")


def use_site():
    """Puts the projects' folder on this process's sys.path and its children's PYTHONPATH."""
    folder = str(site())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if folder not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, *paths]))


def kernels(spec):
    """[(kernel name, "module:function")] of a spec, in its order."""
    entries = tomllib.loads(Path(spec).read_text())["kernel"]
    return [(entry.get("name") or entry["function"].rpartition(":")[2], entry["function"]) for entry in entries]


def pinned_versions():
    """{distribution name: version} from requirements.txt."""
    pins = {}
    for line in (HERE / "requirements.txt").read_text().splitlines():
        match = re.match(r"\s*([A-Za-z0-9_.-]+)==([^\s#]+)", line)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins
