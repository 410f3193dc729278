# `taot check LIBRARY --bench FILE`: run variants over the bench file's shapes and compare their
# outputs with Triton's JIT (bitwise by default), the file's reference, or Triton's interpreter;
# per variant the largest absolute and relative error and the first differing index; exit 1 on a
# mismatch.
import json
import sys

from ..debug import check as engine
from ..measure.benchfile import load_bench_file
from ..cli import add_json_flag, json_document
from ..errors import TaotError
from ..library.built import MANIFEST, load_library, read_manifest
from .bench import add_where_argument, parse_where, shape_filter


def add_arguments(parser):
    parser.add_argument("library", metavar="LIBRARY",
                        help="the output folder of `taot build SPEC --python --build-library`")
    parser.add_argument("--bench", required=True, metavar="FILE", help="the bench file: shapes, make_args, reference")
    parser.add_argument("--kernel", action="append", metavar="NAME", help="only this kernel (repeatable)")
    parser.add_argument("--variants", default="all", metavar="LIST",
                        help="all (default: every variant that takes a shape's arguments), auto, or indices and ids")
    parser.add_argument("--against", choices=engine.AGAINST, default="jit",
                        help="jit: the @triton.jit function through Triton's JIT with the variant's config (bitwise "
                             "unless --tolerance); reference: the bench file's reference (its tolerance); "
                             "interpreter: Triton's interpreter on the CPU (the file's tolerance)")
    parser.add_argument("--tolerance", action="store_true", help="compare with the file's tolerance, also against jit")
    add_where_argument(parser)
    parser.add_argument("--device", default="cuda:0", metavar="DEVICE", help="the torch device (default cuda:0)")
    parser.add_argument("--module-dir", metavar="DIR", help="where the library's module is (default LIBRARY/build)")
    add_json_flag(parser, "every comparison (the summary goes to stderr)")
    parser.add_argument("-o", "--output", metavar="PATH", help="write every comparison as JSON to PATH")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def check(parser, arguments):
    from ..measure.bench import parse_variant_selection
    try:
        arguments.selection = parse_variant_selection(arguments.variants)
    except TaotError as error:
        parser.error(str(error))
    arguments.filters = parse_where(parser, arguments.where)


def run(arguments):
    say = (lambda line: None) if arguments.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    bench_file = load_bench_file(arguments.bench)
    library = load_library(arguments.library, arguments.module_dir)
    if library.folder is None:
        raise TaotError(f"{arguments.library}: checking needs the library folder (its {MANIFEST})")
    manifest = read_manifest(library.folder)
    bench_file.check_library(library.name, library.kernel_names())
    results = engine.run_check(library, manifest, bench_file, kernels=arguments.kernel, variants=arguments.selection,
                               against=arguments.against, device=arguments.device,
                               shapes_filter=shape_filter(arguments.filters, bench_file),
                               exact=False if arguments.tolerance else None, say=say)
    if arguments.json:
        print(json.dumps(comparisons_json(results), indent=1))
    else:
        print_table(results)
    if arguments.output:
        with open(arguments.output, "w") as stream:
            json.dump(comparisons_json(results), stream, indent=1)
            stream.write("\n")
    bad = [r for r in results if r.status != "ok"]
    print(f"{len(results) - len(bad)} of {len(results)} checks passed against {arguments.against}"
          + ("" if not bad else f"; {len(bad)} failed"), file=sys.stderr if arguments.json else sys.stdout)
    if not results:
        raise TaotError("nothing was checked: no variant chosen takes the arguments of the shapes kept")
    return 1 if bad else 0


def comparisons_json(results):
    """What --json prints and -o writes: taot.check, one object per comparison (engine.Comparison's fields)."""
    return json_document("check", {"comparisons": [vars(result) for result in results]})


def print_table(results):
    print(f"{'kernel':14} {'shape':34} {'status':8} {'max abs':>10} {'max rel':>10}  first difference / variant")
    for result in results:
        shape = ", ".join(f"{k}={v}" for k, v in result.shape.items())
        where = f"{result.output}{list(result.first_index)} " if result.first_index is not None else ""
        print(f"{result.kernel:14} {shape:34} {result.status:8} {result.max_abs:10.3g} {result.max_rel:10.3g}  "
              f"{where}{result.variant}" + (f": {result.detail}" if result.status == "error" else ""))
