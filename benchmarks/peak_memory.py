"""Peak resident memory of a command's whole process tree, stage by stage.

Runs the command, reads the resident set size (VmRSS) of the command and every descendant from ``/proc`` every
``--every`` seconds, and prints the peak of their sum (what the machine had to hold at once) and of the largest single
process, overall and for each stage the command announces on stderr with a ``== NAME ...`` line (as
``countdown demo-train`` does). The sum counts pages shared between processes (a forked child's) once per process, so
it is an upper bound. Linux only. Example::

    python benchmarks/peak_memory.py -- countdown demo-train --model smollm2-135m --quick --out runs/demo-quick
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path


def tree_rss(root: int) -> dict[int, int]:
    """Resident bytes of ``root`` and each of its descendants that is alive now."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:  # the process ended while being read
            continue
        pid, ppid = int(fields["Pid"]), int(fields["PPid"])
        children.setdefault(ppid, []).append(pid)
        if "VmRSS" in fields:
            rss[pid] = int(fields["VmRSS"].split()[0]) * 1024
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        tree[pid] = rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=0.5, help="seconds between readings")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    stage = ["start"]
    peaks: dict[str, tuple[int, int]] = {}  # stage -> (peak sum over the tree, peak single process)
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace")

    def follow_stages() -> None:
        for line in process.stderr:
            sys.stderr.write(line)
            if line.startswith("== ") and line.rstrip().endswith("..."):
                stage[0] = line[3:].rstrip()[:-3].strip()

    reader = threading.Thread(target=follow_stages, daemon=True)
    reader.start()
    start = time.perf_counter()
    while process.poll() is None:
        tree = tree_rss(process.pid)
        total, largest = peaks.get(stage[0], (0, 0))
        peaks[stage[0]] = (max(total, sum(tree.values())), max(largest, max(tree.values(), default=0)))
        time.sleep(args.every)
    reader.join(timeout=5)
    seconds = time.perf_counter() - start
    print(f"\npeak resident memory of {' '.join(command)} ({seconds:.0f} s, exit {process.returncode}):")
    print("| stage | process tree, summed (GB) | largest process (GB) |\n| --- | --- | --- |")
    for name, (total, largest) in peaks.items():
        print(f"| {name} | {total / 1e9:.2f} | {largest / 1e9:.2f} |")
    total, largest = max(t for t, _ in peaks.values()), max(p for _, p in peaks.values())
    print(f"| **whole run** | **{total / 1e9:.2f}** | **{largest / 1e9:.2f}** |")
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
