#!/usr/bin/env python3
"""Measures how fast compilers build embedded cubin bytes in the forms taot gen could write.

Not part of the test suite: run it by hand to redo the numbers in docs/generated-api.md.
    python3 tests/unit/codegen/embedding_benchmark.py [--count 400] [--size 10240] [--cxx g++ clang++]
Each form defines COUNT arrays of SIZE random bytes in one translation unit and is compiled with
`CXX -std=c++17 -O2 -c`; the script prints wall time (best of --repeat runs) and source size.
"""
import argparse
import os
import subprocess
import tempfile
import time


def escape(data):
    """taot gen's string-literal form: printable ASCII as is, the rest (and " \\ ?) as \\ooo."""
    out = []
    for byte in data:
        if 0x20 <= byte < 0x7F and byte not in (0x22, 0x5C, 0x3F):
            out.append(chr(byte))
        else:
            out.append("\\%03o" % byte)
    return out


def string_literal(blobs, width):
    parts = ["namespace lib::detail {\n"]
    for i, blob in enumerate(blobs):
        parts.append(f"extern const char cubin_{i}[];\nalignas(16) const char cubin_{i}[] =\n")
        lines, line, used = [], [], 0
        for token in escape(blob):
            if width and used >= width:
                lines.append("".join(line))
                line, used = [], 0
            line.append(token)
            used += len(token)
        lines.append("".join(line))
        parts.append("\n".join(f'    "{text}"' for text in lines) + ";\n")
    parts.append("}\n")
    return "".join(parts)


def byte_array(blobs, spell):
    parts = ["namespace lib::detail {\n"]
    for i, blob in enumerate(blobs):
        parts.append(f"extern const unsigned char cubin_{i}[];\n"
                     f"alignas(16) const unsigned char cubin_{i}[{len(blob)}] = {{\n")
        for start in range(0, len(blob), 16):
            parts.append("    " + ", ".join(spell(b) for b in blob[start:start + 16]) + ",\n")
        parts.append("};\n")
    parts.append("}\n")
    return "".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--size", type=int, default=10 * 1024)
    parser.add_argument("--cxx", nargs="+", default=["g++", "clang++"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    blobs = [os.urandom(args.size) for _ in range(args.count)]
    forms = {
        "hex array (0x7f, 0x45, ...)": byte_array(blobs, lambda b: "0x%02x" % b),
        "decimal array (127,69,...)": byte_array(blobs, str),
        "string literal, one line per cubin": string_literal(blobs, 0),
        "string literal, ~100-column lines (taot gen)": string_literal(blobs, 100),
    }
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{args.count} random cubins of {args.size} bytes; best of {args.repeat}")
        for name, text in forms.items():
            source = os.path.join(tmp, "cubins.cpp")
            with open(source, "w") as f:
                f.write(text)
            times = []
            for cxx in args.cxx:
                best = None
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    subprocess.run([cxx, "-std=c++17", "-O2", "-c", source, "-o", os.path.join(tmp, "cubins.o")],
                                   check=True)
                    elapsed = time.perf_counter() - start
                    best = elapsed if best is None else min(best, elapsed)
                times.append(f"{cxx} {best:6.2f} s")
            print(f"{name:46s} {len(text) / 2**20:6.1f} MiB   " + "   ".join(times))


if __name__ == "__main__":
    main()
