#!/usr/bin/env python3
"""Self cost per function of two callgrind outputs, side by side: what grew and what shrank.

    python3 Benchmarks/callgrind-diff.py before.out after.out [ROWS]

Needs callgrind_annotate (valgrind). Figures in millions of instructions; names as
callgrind_annotate prints them (pipe through `swift demangle --simplified` to read Swift's).
"""
import re
import subprocess
import sys


def self_costs(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+) \([^)]*\)\s+(?:\*\s+)?(.*)$", line)
        if match:
            name = re.sub(r"\s*\[[^\]]*\]$", "", match.group(2).strip())
            costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    before, after = self_costs(sys.argv[1]), self_costs(sys.argv[2])
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 25
    order = sorted(set(before) | set(after), key=lambda name: after.get(name, 0) - before.get(name, 0))
    for title, names in (("grew", order[::-1][:rows]), ("shrank", order[:rows])):
        print(title + ":")
        for name in names:
            was, now = before.get(name, 0), after.get(name, 0)
            print(f"{(now - was) / 1e6:+9.3f} {was / 1e6:10.3f} {now / 1e6:10.3f}  {name[:150]}")


if __name__ == "__main__":
    main()
