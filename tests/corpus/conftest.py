# pytest setup for the corpus tests: this folder first on sys.path (corpus.py, jit.py), and the
# projects' packages (build/corpus-site, or $TAOT_CORPUS_SITE) importable here and in the processes
# the tests start. The `gpu` marker and the build_module fixture come from tests/gpu_modules.py (the
# repo's conftest.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402

corpus.use_site()
