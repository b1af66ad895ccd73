"""The whole benchmark suite in one command (also ``bale bench`` from a checkout).

    python benchmarks/run_all.py [--quick] [--only NAME ...]

Runs every benchmark script of this folder in its own interpreter, in turn
(so that one's memory does not weigh on the next), each writing its own
section of benchmarks/REPORT.md, then writes the report's "Machine" section.
``--quick`` runs every script at a small size (a few minutes in all);
``--only`` picks scripts by name (``foundation``, ``growth``, ...).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

# name: (script, arguments for a quick run, arguments for a full run)
SUITE = {
    "foundation": ("bench_foundation.py", ["--quick"], []),
    "growth": ("bench_growth.py", ["--quick"], []),
    "tables": ("bench_tables.py", ["--quick"], []),
    "fresh": ("bench_fresh.py", ["--quick"], []),
    "cli": ("bench_cli.py", ["--quick"], []),
    "latency": ("bench_latency.py", ["--max-exp", "17", "--repeat", "2"], ["--max-exp", "23", "--repeat", "2"]),
    "kv": ("kv_server.py", ["--seconds", "1"], []),
    "ray": ("bench_ray.py", ["--small", "20000", "--large", "200000"], []),
}


def machine_lines() -> list[str]:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            ram = f"{int(f.readline().split()[1]) / 1024**2:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        ram = "RAM unknown"
    versions = []
    for dist in ("bale", "msgspec", "orjson", "pyarrow", "numpy"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} not installed")
    return [
        f"- {platform.platform()}; {cpu}; {os.cpu_count()} cores; {ram}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}); {', '.join(versions)}",
        "- The machine is shared (2 cores): figures move by 10-20% between runs.",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every script at a small size")
    ap.add_argument("--only", nargs="+", choices=sorted(SUITE), metavar="NAME", help=f"some of: {', '.join(SUITE)}")
    args = ap.parse_args(argv)
    failed = []
    for name in args.only or list(SUITE):
        script, quick, full = SUITE[name]
        cmd = [sys.executable, str(HERE / script), *(quick if args.quick else full)]
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        if subprocess.run(cmd).returncode != 0:
            failed.append(name)
        print(f"== {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    common.write_section("Machine", [*machine_lines(), f"- Suite run: `python benchmarks/run_all.py{' --quick' if args.quick else ''}`"])
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
