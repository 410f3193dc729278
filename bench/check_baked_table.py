"""A tuned table baked into a library (`taot build SPEC --tuning KERNEL=TABLE`), checked by calling the
library automatically, as an application does: for each of the bench file's tune shapes, the variant
the automatic choice takes with no table loaded at run time, against the one the table names for the
shape's key; and the automatic call's outputs against the bench file's reference.

  python3 bench/check_baked_table.py LIBRARY --bench FILE --table TABLE [--module-dir DIR]

Prints one line per shape and a summary; exit status 0 when every shape takes its tuned variant and
matches the reference, 1 when not, 2 for unusable input.
"""
import argparse
import json
import sys
from pathlib import Path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library", metavar="LIBRARY", help="the output folder of taot build --tuning ... --python")
    parser.add_argument("--bench", required=True, metavar="FILE")
    parser.add_argument("--table", required=True, metavar="TABLE", help="the tuned table baked in (taot's format)")
    parser.add_argument("--module-dir", metavar="DIR")
    args = parser.parse_args(argv)
    try:
        table = json.loads(Path(args.table).read_text())
        tuned = {tuple(entry["key"]): entry["measured"]["variant"] for entry in table["entries"]}
        settings = {"library": str(Path(args.library).resolve()), "module_dir": args.module_dir,
                    "kernel": table["kernel"], "bench": str(Path(args.bench).resolve()), "key": table["key"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"error: {args.table}: not a taot tuned table ({type(error).__name__}: {error})", file=sys.stderr)
        return 2

    from taot.measure.bench import ArgumentCache
    from taot.measure.calls import compare_outputs
    from taot.measure.tuner import RealBackend

    backend = RealBackend(settings)
    ids = [variant["id"] for variant in backend.variants]
    right = 0
    shapes = backend.kernel_bench.tune_shapes
    for shape in shapes:
        chosen = backend.choose(shape)  # the automatic choice, nothing loaded
        cache = ArgumentCache(backend.kernel_bench, backend.info, backend.device)
        call_args, guard, expected = cache.entry(shape, backend.variants[ids.index(chosen)]["config"])
        key = tuple(backend.key_of(call_args))
        guard.restore()
        backend.kernel(*call_args)  # automatic, as an application calls it
        backend.torch.cuda.synchronize()
        problems = compare_outputs(backend.kernel_bench, cache.output_names, guard.outputs(), expected) \
            if expected is not None else []
        ok = tuned.get(key) == chosen and not problems
        right += ok
        print(f"{dict(shape)}: key {list(key)} -> {chosen[-12:]}, table {str(tuned.get(key))[-12:]}"
              f"{'' if not problems else '; outputs differ: ' + '; '.join(problems)}{'' if ok else '  MISMATCH'}")
    print(f"the baked table's variant taken automatically, outputs as the reference: {right} of {len(shapes)} shapes")
    return 0 if right == len(shapes) else 1


if __name__ == "__main__":
    sys.exit(main())
