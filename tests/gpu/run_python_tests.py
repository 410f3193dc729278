"""Runs the test_* functions of the given files (pytest where installed, else this small runner)
and ends with "N passed, N failed". For the GPU machines, which may lack pytest."""
import importlib.util
import sys
import traceback
from pathlib import Path


def main(paths):
    try:
        import pytest  # noqa: F401
        return pytest.main(["-q", *paths])
    except ImportError:
        pass
    passed = failed = 0
    for path in (p for p in paths if not p.startswith("-")):  # options are pytest's
        spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in sorted(n for n in dir(module) if n.startswith("test_")):
            try:
                getattr(module, name)()
                passed += 1
            except Exception:
                failed += 1
                print(f"FAIL {path}::{name}")
                traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
