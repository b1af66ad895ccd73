"""Ray object store: ray.get of regions is O(1) whatever their size.

    python benchmarks/bench_ray.py [--small 120000] [--large 6000000]

Puts a ~10 MB and a ~500 MB region (tweet-like records) into a local Ray
cluster (ray.init(num_cpus=2)), and times ray.get in the driver and a task
that receives the region as an argument, against the same records as Python
objects. Writes benchmarks/REPORT.md (section "Ray object store").
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=120_000, help="records in the small dataset (~10 MB region)")
    ap.add_argument("--large", type=int, default=6_000_000, help="records in the large dataset (~500 MB region)")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    rows = []
    try:
        ray.get(first_user.remote([{"user_id": 0}]))  # start the workers
        for n in (args.small, args.large):
            records = tweets(n, seed=5)
            region = bale.compact(records)
            size = f"{region.nbytes / 1e6:.0f} MB"
            region_ref, records_ref = ray.put(region), ray.put(records)
            del region
            for label, ref in (("region", region_ref), ("Python objects", records_ref)):
                t_get = best(lambda: ray.get(ref), 5 if label == "region" else 2)
                t_task = best(lambda: ray.get(first_user.remote(ref)), 5 if label == "region" else 2)
                rows.append((f"{n:,} records ({size} region)", label, duration(t_get), duration(t_task)))
                print("  ".join(f"{c:>28s}" for c in rows[-1]), flush=True)
            del records, region_ref, records_ref
    finally:
        ray.shutdown()
    if not args.no_report:
        common.write_section("Ray object store", [
            "`python benchmarks/bench_ray.py`: a local cluster (`ray.init(num_cpus=2)`); best of several runs. "
            "`ray.get` in the driver, and a task that receives the object as its argument and reads one record.",
            "",
            *common.table(["dataset", "held as", "ray.get", "task reading record 0"], ["l", "l", "r", "r"], rows),
        ])


if __name__ == "__main__":
    sys.exit(main())
