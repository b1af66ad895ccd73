"""A map-style dataset backed by a region, read by forked workers.

PyTorch's DataLoader reads a map-style dataset through ``__len__`` and
``__getitem__`` from forked worker processes. With the samples held as Python
objects, every read writes the objects' reference counts, so each worker
slowly copies the parent's pages (PyTorch issue 13246). Held in a region, the
samples are read in place and the pages stay shared.

This script runs without torch: it forks a pool of workers that read every
sample the way DataLoader workers would, and prints how much private memory
each worker gained, for the same data held both ways.

    python examples/dataloader.py [--samples N] [--workers W]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing

import bale
from bale._datagen import tweets


class RegionDataset:
    """Map-style dataset: one record per index, read in place."""

    def __init__(self, records):
        self.region = bale.compact(records)
        self.samples = self.region.root

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        record = self.samples[i]
        # What a collate step would consume: small native values.
        return record["user_id"], len(record["hashtags"]), list(record["urls"])


class ListDataset:
    """The same dataset as a plain list of dicts."""

    def __init__(self, records):
        self.samples = records

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        record = self.samples[i]
        return record["user_id"], len(record["hashtags"]), list(record["urls"])


def private_dirty_mb() -> float:
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1]) / 1024
    return float("nan")


DATASET = None  # set in the parent before forking: workers inherit it


def worker(shard: tuple[int, int, int]) -> tuple[float, int]:
    start, stop, step = shard
    before = private_dirty_mb()
    checksum = 0
    for i in range(start, stop, step):
        user_id, n_tags, urls = DATASET[i]
        checksum += user_id % 7 + n_tags + len(urls)
    return private_dirty_mb() - before, checksum


def run(dataset, workers: int) -> tuple[list[float], int]:
    global DATASET
    DATASET = dataset
    gc.collect()
    gc.freeze()  # as DataLoader users are advised to: keep the GC from touching pages
    try:
        ctx = multiprocessing.get_context("fork")
        shards = [(w, len(dataset), workers) for w in range(workers)]
        with ctx.Pool(workers) as pool:
            results = pool.map(worker, shards)
    finally:
        gc.unfreeze()
    return [mb for mb, _ in results], sum(c for _, c in results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    records = tweets(args.samples)
    as_region = RegionDataset(records)
    region_mb, region_sum = run(as_region, args.workers)
    list_mb, list_sum = run(ListDataset(records), args.workers)
    assert region_sum == list_sum, "both datasets must yield the same samples"
    print(f"{args.samples:,} samples, {args.workers} forked workers, each reading 1/{args.workers} of them")
    print(f"  region ({as_region.region.nbytes / 1e6:.0f} MB): private memory gained per worker: "
          + ", ".join(f"{mb:.1f} MB" for mb in region_mb))
    print("  list of dicts:        private memory gained per worker: " + ", ".join(f"{mb:.1f} MB" for mb in list_mb))


if __name__ == "__main__":
    main()
