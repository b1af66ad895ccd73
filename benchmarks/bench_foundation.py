"""Foundation benchmark: bale against pickle and msgspec in the same run.

    python benchmarks/bench_foundation.py [--quick]

Measures compaction (tweet-like records and a binary tree of 2-tuples), O(1)
load of a ~100 MB region, point access and full scan against native objects,
gc.collect() with the data alive, region size, verification speed and thaw,
and writes the table to benchmarks/REPORT.md (section "Foundation").
Figures are best-of-N wall times on this machine; ratios are against
baselines measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import platform
import random
import re
import subprocess
import sys
import time

import msgspec

import bale
from bale._datagen import bintree, tweets

HERE = os.path.dirname(os.path.abspath(__file__))


def best(f, repeat=5):
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def per_call(f, number=200, repeat=5):
    """Best per-call time of ``f`` over ``repeat`` samples of ``number`` calls."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        samples.append((time.perf_counter() - t0) / number)
    return min(samples)


def gc_in_fresh_process(setup: str) -> float:
    """Best gc.collect() time in a new interpreter after running ``setup``."""
    prog = setup + (
        "\nimport gc, time\ngc.collect()\nts = []\n"
        "for _ in range(5):\n    t0 = time.perf_counter(); gc.collect(); ts.append(time.perf_counter() - t0)\n"
        "print(min(ts))\n"
    )
    out = subprocess.run([sys.executable, "-c", prog], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100k records and a 2^16-leaf tree")
    ap.add_argument("--no-report", action="store_true", help="do not rewrite benchmarks/REPORT.md")
    args = ap.parse_args()
    n = 100_000 if args.quick else 1_000_000
    depth = 16 if args.quick else 20
    rows = []  # (measure, bale, baseline, ratio, target, met)

    def row(measure, ours, base, ratio, target, met):
        rows.append((measure, ours, base, ratio, target, "yes" if met else "**no**"))
        print(f"{measure:58s} {ours:>12s} {base:>14s} {ratio:>8s}  target {target:<14s} {'met' if met else 'MISSED'}", flush=True)

    print(f"{machine()}\n", flush=True)
    data = tweets(n)
    tree = bintree(depth)
    enc = msgspec.msgpack.Encoder()

    for label, obj in [(f"{n:,} tweet-like records", data), (f"2^{depth}-leaf bintree", tree)]:
        t_bale = best(lambda: bale.compact(obj))
        t_pickle = best(lambda: pickle.dumps(obj, protocol=5))
        t_msgspec = best(lambda: enc.encode(obj))
        row(f"compact, {label} (vs pickle.dumps)", f"{t_bale*1e3:.1f} ms", f"{t_pickle*1e3:.1f} ms",
            f"{t_bale/t_pickle:.2f}x", "<= 0.5x", t_bale / t_pickle <= 0.5)
        row(f"compact, {label} (vs msgspec encode)", f"{t_bale*1e3:.1f} ms", f"{t_msgspec*1e3:.1f} ms",
            f"{t_bale/t_msgspec:.2f}x", "(info)", True)
        region = bale.compact(obj)
        pickled = pickle.dumps(obj, protocol=5)
        t_thaw = best(lambda: bale.thaw(region.root), 3)
        t_loads = best(lambda: pickle.loads(pickled), 3)
        row(f"thaw, {label} (vs pickle.loads)", f"{t_thaw*1e3:.1f} ms", f"{t_loads*1e3:.1f} ms",
            f"{t_thaw/t_loads:.2f}x", "(info)", True)
        row(f"size, {label} (vs pickle bytes)", f"{region.nbytes/1e6:.1f} MB", f"{len(pickled)/1e6:.1f} MB",
            f"{region.nbytes/len(pickled):.2f}x", "<= 1.5x" if "tweet" in label else "(info)",
            region.nbytes / len(pickled) <= 1.5 or "tweet" not in label)
        del region, pickled

    region = bale.compact(data)
    root = region.root
    rng = random.Random(1)
    keys = [rng.randrange(n) for _ in range(200_000)]

    def point(d):
        s = 0
        for k in keys:
            s += d[k]["user_id"]
        return s

    assert point(root) == point(data)
    t_native = best(lambda: point(data))
    t_view = best(lambda: point(root))
    row("point access root[k]['user_id'] (vs native)", f"{t_view/len(keys)*1e9:.0f} ns", f"{t_native/len(keys)*1e9:.0f} ns",
        f"{t_view/t_native:.2f}x", "<= 3x", t_view / t_native <= 3)

    def scan(d):
        return sum(len(t["hashtags"]) for t in d)

    assert scan(root) == scan(data)
    t_native = best(lambda: scan(data))
    t_view = best(lambda: scan(root))
    row("full scan sum(len(t['hashtags'])) (vs native)", f"{t_view*1e3:.1f} ms", f"{t_native*1e3:.1f} ms",
        f"{t_view/t_native:.2f}x", "<= 2.5x", t_view / t_native <= 2.5)

    t_verify = best(region.verify, 3)
    rate = region.nbytes / t_verify / 1e9
    row("verify (structure + checksum)", f"{rate:.2f} GB/s", "", "", ">= 1 GB/s", rate >= 1.0)

    # gc.collect() with the data alive, each in a fresh process that holds
    # only that data: the native records (unpickled) or the region (opened).
    pkl, reg = os.path.join(HERE, "_work.pkl"), os.path.join(HERE, "_work_gc.bale")
    try:
        with open(pkl, "wb") as f:
            pickle.dump(data, f, protocol=5)
        region.save(reg)
        t_gc_native = gc_in_fresh_process(f"import pickle\nwith open({pkl!r}, 'rb') as f: d = pickle.load(f)")
        t_gc_region = gc_in_fresh_process(f"import bale\nd = bale.open({reg!r}).root")
    finally:
        for p in (pkl, reg):
            if os.path.exists(p):
                os.remove(p)
    row("gc.collect() with the data alive (vs native), fresh processes", f"{t_gc_region*1e3:.2f} ms",
        f"{t_gc_native*1e3:.1f} ms", f"{t_gc_region/t_gc_native:.4f}x", "<= 1% (0.01x)", t_gc_region / t_gc_native <= 0.01)

    # O(1) load of a ~100 MB region (bytes in memory), whatever its size.
    big = bytes(bale.compact(tweets(1_200_000 if not args.quick else 150_000, seed=3)))
    t_load = per_call(lambda: bale.load(big))
    row(f"bale.load of a {len(big)/1e6:.0f} MB region", f"{t_load*1e6:.1f} µs", "", "", "< 100 µs", t_load < 100e-6)
    path = os.path.join(HERE, "_work.bale")
    try:
        bale.load(big).save(path)
        t_open = per_call(lambda: bale.open(path))
        row(f"bale.open of a {len(big)/1e6:.0f} MB file", f"{t_open*1e6:.1f} µs", "", "", "< 100 µs", t_open < 100e-6)
    finally:
        if os.path.exists(path):
            os.remove(path)

    if not args.no_report:
        write_report(rows, args.quick)


def write_report(rows, quick: bool) -> None:
    lines = [
        "## Foundation",
        "",
        f"`python benchmarks/bench_foundation.py{' --quick' if quick else ''}` on {machine()}.",
        "Best of several runs; every ratio is against a baseline measured in the same run.",
        "",
        "| measure | bale | baseline | ratio | target | met |",
        "| --- | ---: | ---: | ---: | --- | --- |",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    section = "\n".join(lines) + "\n"
    report = os.path.join(HERE, "REPORT.md")
    text = open(report).read() if os.path.exists(report) else "# Benchmark report\n\n"
    if "## Foundation" in text:
        text = re.sub(r"## Foundation\n.*?(?=\n## |\Z)", section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(report, "w") as f:
        f.write(text)
    print(f"\nwrote {report}")


if __name__ == "__main__":
    sys.exit(main())
