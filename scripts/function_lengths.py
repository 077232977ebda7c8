#!/usr/bin/env python3
"""The function-length budget (docs/testing.md): lists the library's
functions over 100 lines and fails (exit 1) on any over 200 lines that the
allowlist (scripts/function_lengths_allowed.txt: "file:function lines", the
long functions that predate the budget, each to shrink, never to grow) does
not hold at that length or more.

    scripts/function_lengths.py [--list]

A function here is a definition starting at column 0 (a line ending in
'{' whose first line starts at column 0 and is not a namespace, class,
struct or enum) and ending at the next line that is '}' at column 0: the
project's formatting (clang-format, Google style) puts both there. Lambdas
and methods defined in class bodies count within their enclosing function
or not at all. Unit tests, benchmarks and fuzzers are not library code.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {"tests", "bench", "fuzz", "cmake", "scripts", "docs", "results", "scenarios"}
ALLOWED = os.path.join(ROOT, "scripts", "function_lengths_allowed.txt")
START = re.compile(r"^(?!namespace|class|struct|enum|union|extern|template\s*<[^>]*>\s*(class|struct))"
                   r"[A-Za-z_].*\)\s*(const)?\s*(override)?\s*(noexcept)?\s*(->\s*[^{]+)?\{\s*$")


def functions(path):
    lines = open(path, errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        # A signature may span lines: find the line that opens the body.
        if line and not line[0].isspace() and not line.startswith(("#", "//", "}")):
            j = i
            while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                head = " ".join(x.strip() for x in lines[i:j + 1])
                if START.match(head) or (")" in head and not re.match(
                        r"^(namespace|class|struct|enum|union|extern)\b", head)
                        and "=" not in head.split("(")[0]):
                    k = j + 1
                    while k < len(lines) and lines[k] != "}" and not lines[k].startswith("};"):
                        k += 1
                    name = re.sub(r"\(.*", "", head).split()[-1] if "(" in head else head
                    yield name, i + 1, k - i + 1
                    i = k
        i += 1


def main():
    allowed = {}
    if os.path.exists(ALLOWED):
        for line in open(ALLOWED):
            line = line.strip()
            if line and not line.startswith("#"):
                key, n = line.rsplit(" ", 1)
                allowed[key] = int(n)
    over100, failures = [], []
    for root, dirs, files in os.walk(ROOT):
        rel = os.path.relpath(root, ROOT)
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))
                   and not (rel == "." and d in SKIP)]
        for f in sorted(files):
            if not f.endswith((".cc", ".h", ".cu")) or f.endswith(("_test.cc", "_test.cu")):
                continue
            path = os.path.join(root, f)
            for name, line, n in functions(path):
                key = f"{os.path.relpath(path, ROOT)}:{name}"
                if n > 100:
                    over100.append((n, key, line))
                if n > 200 and n > allowed.get(key, 0):
                    failures.append(f"{key} (line {line}): {n} lines, over the 200-line budget"
                                    + (f" and its allowed {allowed[key]}" if key in allowed else ""))
    if "--list" in sys.argv:
        for n, key, line in sorted(over100, reverse=True):
            print(f"{n:5d}  {key} (line {line})")
    for f in failures:
        print("error:", f, file=sys.stderr)
    print(f"{len(over100)} functions over 100 lines, {len(failures)} over budget", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
