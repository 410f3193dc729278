"""Whether two `taot tune` runs of one library agree: each run's choice per key timed in the other run,
over that run's best (target <= 1.02), from their output folders alone (the table and the journal).

  python3 bench/tune_agreement.py RUN_A RUN_B [--names "one GPU" "every GPU"] [--wall-ms A_MS B_MS]

A choice is judged where the other run timed it: against that run's best in its final comparison when
it was among its leaders there (they were timed together, on one GPU), else against the best full
median of the GPU that timed it (medians of two GPUs of one kind differ by a few per cent, so they are
not compared), else, when the other run pruned it, by its quick time on that GPU. Run B may be an
exhaustive run (`--prune-ratio 0`) of some of A's keys (`--subset`): then the figure is "within x of
the exhaustive best". Only keys both runs chose for are compared. Exit status 0 when both runs have the
same keys, or with --subset when B's are among A's (the figures are printed whether or not they meet
their target), 1 when not, 2 for unreadable input.
"""
import argparse
import json
import sys
from pathlib import Path

from taot.errors import TaotError
from taot.measure.tuner import read_journal

TARGET = 1.02


class Run:
    """One run's choices {key: id}, and per key its results {id: journal line} and final times {id: ms}."""

    def __init__(self, folder, kernel):
        folder = Path(folder)
        table = json.loads((folder / f"{kernel}.json").read_text())
        self.chosen = {tuple(entry["key"]): entry["measured"]["variant"] for entry in table["entries"]}
        _, tasks, _ = read_journal(folder / f"{kernel}.journal.jsonl")
        listed = [state for state in tasks.values() if state["key"] is not None]
        self.results = {tuple(state["key"]): state["results"] for state in listed}
        self.finals = {tuple(state["key"]): state["final"] for state in listed if "final" in state}

    def ratio(self, key, choice):
        """(`choice` over this run's best for `key`, how it was judged), or (None, why not)."""
        final = self.finals.get(key, {})
        if choice in final:
            return final[choice] / min(final.values()), "final"
        result = self.results.get(key, {}).get(choice)
        if result is None or result["status"] not in ("ok", "pruned"):
            return None, result["status"] if result else "not run"
        same_gpu = [r["median_ms"] for r in self.results[key].values()
                    if r["status"] == "ok" and r.get("gpu") == result.get("gpu")]
        if not same_gpu:
            return None, "no candidate timed in full on its GPU"
        return result["median_ms"] / min(same_gpu), result["status"]


def compare(mine, other, label, keys):
    """Prints `mine`'s choices for `keys` timed in `other`; returns the worst ratio (None when none was
    judged)."""
    ratios, unjudged = {}, {}
    for key in keys:
        ratio, how = other.ratio(key, mine.chosen[key])
        (ratios if ratio is not None else unjudged)[key] = (ratio, how)
    worst = max(ratios.items(), key=lambda item: item[1][0], default=None)
    text = f"{label}: {len(ratios)} of {len(keys)} timed there"
    if worst:
        key, (ratio, how) = worst
        text += f", worst {ratio:.3f}x its best (key {list(key)}, judged by its {how} time; target {TARGET})"
        text += f"; within {TARGET}: {sum(r <= TARGET for r, _ in ratios.values())} of {len(ratios)}"
    print(text)
    for key, (_, how) in sorted(unjudged.items()):
        print(f"  key {list(key)}: not judged ({how})")
    return worst and worst[1][0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", metavar="RUN_A")
    parser.add_argument("run_b", metavar="RUN_B")
    parser.add_argument("--kernel", default="fused_moe_kernel")
    parser.add_argument("--names", nargs=2, default=("run A", "run B"), metavar=("A", "B"))
    parser.add_argument("--wall-ms", nargs=2, type=int, metavar=("A_MS", "B_MS"))
    parser.add_argument("--subset", action="store_true", help="B tuned some of A's keys")
    args = parser.parse_args(argv)
    try:
        a, b = Run(args.run_a, args.kernel), Run(args.run_b, args.kernel)
    except (OSError, ValueError, KeyError, TaotError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    shared = sorted(set(a.chosen) & set(b.chosen))
    same = sum(a.chosen[key] == b.chosen[key] for key in shared)
    line = f"the same config chosen for {same} of {len(shared)} keys"
    if args.wall_ms:
        line = (f"{args.names[0]} {args.wall_ms[0] / 1000:.1f} s, {args.names[1]} {args.wall_ms[1] / 1000:.1f} s: "
                f"{args.wall_ms[0] / args.wall_ms[1]:.2f}x; ") + line
    print(line)
    compare(a, b, f"{args.names[0]} choices in the {args.names[1]} run", shared)
    compare(b, a, f"{args.names[1]} choices in the {args.names[0]} run", shared)
    agree = set(b.chosen) <= set(a.chosen) if args.subset else set(a.chosen) == set(b.chosen)
    if not agree:
        print(f"the runs tuned different keys: {sorted(set(a.chosen) ^ set(b.chosen))}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
