"""The `taot tune` figure from the files alone: per batch size, the config taot tune chose, the JIT
tuner's best (bench/moe_tune_jit.py, benchmark_moe.py's method), and the JIT-measured time of taot's
choice over the JIT best (target <= 1.02: within 2% of the exhaustive best over the candidates run);
then both tools' wall times and their ratio (target >= 10x).

  python3 bench/moe_tune_compare.py --jit jit.json --taot TUNE_OUT/fused_moe_kernel.json --taot-wall-s 41.3

--jit takes several files when the JIT search was split over device calls (disjoint batch sizes): their
wall times are added, counting the compile (first calls) of one file only, since a single run compiles
each config once. taot's wall time comes from --taot-wall-s (the measured `taot tune` command), else
from the table or the journal when they record one (read_taot). Exit status 0 (the figure is printed
whether or not it meets its targets), 2 for unreadable input.
"""
import argparse
import json
import sys
from pathlib import Path

TARGET_RATIO = 1.02
TARGET_SPEEDUP = 10.0
SHORT = {"BLOCK_SIZE_M": "m", "BLOCK_SIZE_N": "n", "BLOCK_SIZE_K": "k", "GROUP_SIZE_M": "g", "num_warps": "w",
         "num_stages": "s"}


def read_taot(table_path, journal_path=None):
    """taot tune's output: ({M: chosen config}, {M: its median ms as taot measured it}, {M: candidates},
    wall seconds or None). The table is taot's format (docs/tuning.md): entries {"key": [M],
    "config": {...}, "measured": {"median_ms", "candidates", ...}}. A wall time is looked for as
    "wall_s" in the table's "measured" and in the journal (JSON lines; the last record that has one)."""
    table = json.loads(Path(table_path).read_text())
    choices, medians, counts = {}, {}, {}
    for entry in table["entries"]:
        m = int(entry["key"][0])
        choices[m] = entry["config"]
        measured = entry.get("measured") or {}
        medians[m] = measured.get("median_ms")
        counts[m] = measured.get("candidates")
    wall = (table.get("measured") or {}).get("wall_s")
    if journal_path is not None:
        for line in Path(journal_path).read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("wall_s"), (int, float)):
                wall = record["wall_s"]
    return choices, medians, counts, wall


def read_jit(paths):
    """The JIT tuner's files merged: (batch sizes {M: result}, configs {label: config}, candidates,
    wall s, compile s, notes)."""
    batch_sizes, configs, notes = {}, {}, []
    walls, compiles, candidates = [], [], set()
    for path in paths:
        report = json.loads(Path(path).read_text())
        walls.append(report["wall_s"])
        compiles.append(report["compile_s"])
        candidates.add(report["candidates"])
        configs.update(report["configs"])
        for key, result in report["batch_sizes"].items():
            if int(key) in batch_sizes:
                raise ValueError(f"{path}: batch size {key} is also in an earlier --jit file")
            batch_sizes[int(key)] = result
        if report.get("not_run"):
            notes.append(f"{path}: not run: {', '.join(map(str, report['not_run']))}")
    if len(candidates) > 1:
        raise ValueError(f"the --jit files ran different candidate counts: {sorted(candidates)}")
    wall = sum(walls) - sum(compiles) + max(compiles)
    if len(paths) > 1:
        notes.append(f"JIT wall time: {len(paths)} files added ({' + '.join(f'{w:.1f}' for w in walls)} s) "
                     f"less the compile of all but the longest ({sum(compiles) - max(compiles):.1f} s)")
    return batch_sizes, configs, candidates.pop(), wall, max(compiles), notes


def matching_label(config, configs):
    """The JIT candidate whose config agrees with `config` on every field both give (taot's table gives
    the fields that vary); None when none or several do."""
    found = [name for name, candidate in configs.items()
             if all(candidate[field] == value for field, value in config.items() if field in candidate)]
    return found[0] if len(found) == 1 else None


def short(config):
    parts = [f"{abbreviation}{config[name]}" for name, abbreviation in SHORT.items() if name in config]
    return " ".join(parts + [f"{name}={value}" for name, value in config.items() if name not in SHORT])


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jit", type=Path, nargs="+", required=True, metavar="JSON",
                        help="bench/moe_tune_jit.py's --json file(s)")
    parser.add_argument("--taot", type=Path, required=True, metavar="TABLE",
                        help="taot tune's table in taot's format (OUTPUT/<kernel>.json)")
    parser.add_argument("--taot-journal", type=Path, metavar="JSONL",
                        help="taot tune's journal (a wall time, if it has one)")
    parser.add_argument("--taot-wall-s", type=float, metavar="S",
                        help="taot tune's wall time, measured around the command")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figure as JSON")
    return parser.parse_args(argv)


def main(argv=None):
    arguments = parse_arguments(argv)
    try:
        choices, medians, taot_counts, taot_wall = read_taot(arguments.taot, arguments.taot_journal)
        jit, configs, jit_candidates, jit_wall, jit_compile, notes = read_jit(arguments.jit)
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"moe_tune_compare: cannot read the inputs: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    if arguments.taot_wall_s is not None:
        taot_wall = arguments.taot_wall_s

    both = sorted(set(choices) & set(jit))
    rows, ratios = [], []
    print(f"{'M':>5}  {'taot tune chose':26} {'JIT best':26} {'JIT best us':>11} {'JIT us of taot':>14} "
          f"{'ratio':>6}  {'taot us':>8}  cands taot/JIT")
    for m in both:
        result = jit[m]
        name = matching_label(choices[m], configs)
        taot_us = result["times_us"].get(name) if name else None
        ratio = taot_us / result["best_us"] if taot_us else None
        if ratio is not None:
            ratios.append(ratio)
        median = medians.get(m)
        flag = "" if ratio is None else ("" if ratio <= TARGET_RATIO else "  > 1.02")
        print(f"{m:5}  {(name or short(choices[m])):26} {result['best_label']:26} {result['best_us']:11.2f} "
              f"{(f'{taot_us:.2f}' if taot_us else 'n/a'):>14} {(f'{ratio:.3f}' if ratio else 'n/a'):>6}  "
              f"{(f'{median * 1e3:.2f}' if median is not None else 'n/a'):>8}  "
              f"{taot_counts.get(m) if taot_counts.get(m) is not None else '?'}/{jit_candidates}{flag}")
        if name is None:
            notes.append(f"M={m}: taot's choice {short(choices[m])} is not one JIT candidate (not run, or ambiguous)")
        elif taot_us is None:
            notes.append(f"M={m}: the JIT tuner has no time for taot's choice {name} (Triton refused it)")
        rows.append({"M": m, "taot": choices[m], "taot_label": name, "jit_best": result["best"],
                     "jit_best_label": result["best_label"], "jit_best_us": result["best_us"],
                     "jit_us_of_taot_choice": taot_us, "ratio": ratio,
                     "taot_median_us": median * 1e3 if median is not None else None})
    only_taot, only_jit = sorted(set(choices) - set(jit)), sorted(set(jit) - set(choices))
    if only_taot or only_jit:
        notes.append(f"batch sizes not in both: taot only {only_taot or 'none'}, JIT only {only_jit or 'none'} "
                     f"(the wall times are of different searches)")
    counts = {c for c in taot_counts.values() if c is not None}
    if counts and counts != {jit_candidates}:
        notes.append(f"candidates: taot tune had {sorted(counts)} per batch size, the JIT tuner {jit_candidates}")

    within = sum(1 for r in ratios if r <= TARGET_RATIO)
    print()
    if ratios:
        print(f"taot's choice within 2% of the JIT best: {within}/{len(ratios)} batch sizes; worst ratio "
              f"{max(ratios):.3f} (target <= {TARGET_RATIO})")
    speedup = jit_wall / taot_wall if taot_wall else None
    print(f"wall time: JIT tuner {jit_wall:.1f} s (first calls, compiling: {jit_compile:.1f} s), taot tune "
          + (f"{taot_wall:.1f} s: {speedup:.1f}x (target >= {TARGET_SPEEDUP:g}x)" if taot_wall
             else "unknown (give --taot-wall-s)"))
    print(f"over {len(both)} batch sizes x {jit_candidates} candidates")
    for note in notes:
        print(f"note: {note}")
    if arguments.json:
        arguments.json.write_text(json.dumps({
            "rows": rows, "within_2_percent": within, "compared": len(ratios),
            "worst_ratio": max(ratios) if ratios else None, "jit_wall_s": jit_wall, "jit_compile_s": jit_compile,
            "taot_wall_s": taot_wall, "speedup": speedup, "candidates": jit_candidates, "notes": notes},
            indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
