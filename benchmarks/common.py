"""Shared by the benchmark scripts: REPORT.md sections (each script owns one) and socket reads."""

from __future__ import annotations

import gc
import os
import socket
import time

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "REPORT.md")


def best(f, repeat: int = 5) -> float:
    """Best wall time of ``f()`` over ``repeat`` runs, each after a gc.collect()."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def table(header: list[str], align: list[str], rows: list[tuple[str, ...]]) -> list[str]:
    """A Markdown table; ``align`` holds "l" or "r" per column."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def write_section(title: str, lines: list[str]) -> None:
    """Replace (or append) the section ``## title`` of REPORT.md with ``lines``."""
    section = [f"## {title}", ""] + lines
    text = open(REPORT).read() if os.path.exists(REPORT) else "# Benchmark report\n"
    out, skipping, replaced = [], False, False
    for line in text.splitlines():
        if line.startswith("## "):
            skipping = line == f"## {title}"
            if skipping:
                out += section + [""]
                replaced = True
                continue
        if not skipping:
            out.append(line)
    if not replaced:
        out += ["", *section]
    with open(REPORT, "w") as f:
        f.write("\n".join(out).rstrip("\n") + "\n")
    print(f"wrote {REPORT}")


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Exactly ``n`` bytes from ``sock`` into one buffer."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("peer closed")
        got += k
    return buf
