"""Ray object store: ray.get of regions is O(1) whatever their size.

    python benchmarks/bench_ray.py [--quick | --smoke] [--small N] [--large N] [--no-report]

Puts a ~10 MB and a ~500 MB region (tweet-like records) into a local Ray
cluster (ray.init(num_cpus=2)), and times ray.get in the driver and a task
that receives the region as an argument, against the same records as Python
objects; both answers are checked against the records. ``--quick`` uses
20,000 and 200,000 records, ``--smoke`` 2,000 and 20,000 (``--small`` and
``--large`` override them). Writes the section "Ray object store".
"""

from __future__ import annotations

import argparse
import sys
import time

import ray

import bale
import common
from bale._datagen import tweets
from bale._fmt import duration



@ray.remote
def first_user(data):
    rec = data.root[0] if isinstance(data, bale.Region) else data[0]
    return rec["user_id"]


def best(f, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


# records in the small and the large dataset, per mode
SIZES = {"smoke": (2_000, 20_000), "quick": (20_000, 200_000), "full": (120_000, 6_000_000)}


def options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--small", type=int, help="records in the small dataset (full run: 120,000, ~10 MB region)")
    ap.add_argument("--large", type=int, help="records in the large dataset (full run: 6,000,000, ~500 MB region)")


def run(mode: str, plots_dir: str, args: argparse.Namespace | None = None) -> common.Section:
    small, large = SIZES[mode]
    if args is not None:
        small = args.small if args.small is not None else small
        large = args.large if args.large is not None else large
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    rows = []
    try:
        ray.get(first_user.remote([{"user_id": 0}]))  # start the workers
        for n in (small, large):
            records = tweets(n, seed=5)
            region = bale.compact(records)
            size = f"{region.nbytes / 1e6:.0f} MB"
            region_ref, records_ref = ray.put(region), ray.put(records)
            del region
            expected = records[0]["user_id"]
            if ray.get(region_ref).root[0] != records[0] or ray.get(first_user.remote(region_ref)) != expected \
                    or ray.get(first_user.remote(records_ref)) != expected:
                raise SystemExit(f"{n:,} records: the region or the records read back through Ray differ")
            for label, ref in (("region", region_ref), ("Python objects", records_ref)):
                t_get = best(lambda: ray.get(ref), 5 if label == "region" else 2)
                t_task = best(lambda: ray.get(first_user.remote(ref)), 5 if label == "region" else 2)
                rows.append((f"{n:,} records ({size} region)", label, duration(t_get), duration(t_task)))
                print("  ".join(f"{c:>28s}" for c in rows[-1]), flush=True)
            del records, region_ref, records_ref
    finally:
        ray.shutdown()
    lines = [
        f"`python benchmarks/bench_ray.py{'' if mode == 'full' else ' --' + mode}`: a local cluster "
        "(`ray.init(num_cpus=2)`); best of several runs. "
        "`ray.get` in the driver, and a task that receives the object as its argument and reads one record.",
        "",
        *common.table(["dataset", "held as", "ray.get", "task reading record 0"], ["l", "l", "r", "r"], rows),
    ]
    return common.Section("Ray object store", lines, [], [])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run, options)


if __name__ == "__main__":
    sys.exit(main())
