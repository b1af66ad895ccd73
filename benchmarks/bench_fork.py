"""Fork memory of many readers: private memory each forked reader gains, region against lists of dicts.

    python benchmarks/bench_fork.py [--quick | --smoke] [--no-report]

Uses the map-style datasets of ``examples/dataloader.py`` (the protocol
PyTorch's DataLoader reads): 1,000,000 tweet-like records (200,000 with
``--quick``) held in a region or as a list of dicts, read by 4 forked
workers, each taking one index in 4 and turning it into a sample. The
parent calls ``gc.freeze()`` before forking, as DataLoader users are told
to. Each worker reports the growth of its ``Private_Dirty`` memory
(``/proc/self/smaps_rollup``) over its reads: pages it copied from the
parent. Writes the section "Fork memory of many readers" and
``plots/fork_memory.png``.
"""

from __future__ import annotations

import os
import sys

import common
from bale._datagen import tweets

sys.path.insert(0, os.path.join(os.path.dirname(common.HERE), "examples"))
import dataloader  # noqa: E402 (examples/ is not a package)

SIZES = {"smoke": (5_000, 2), "quick": (200_000, 4), "full": (1_000_000, 4)}


def run(mode: str, plots_dir: str) -> common.Section:
    n, workers = SIZES[mode]
    records = tweets(n, seed=4)
    as_region = dataloader.RegionDataset(records)
    region_mb, region_sum = dataloader.run(as_region, workers)
    as_lists = dataloader.ListDataset(records)
    lists_mb, lists_sum = dataloader.run(as_lists, workers)
    if region_sum != lists_sum:
        raise SystemExit("the two datasets gave different samples")
    region_size = as_region.region.nbytes
    rows = [
        ("region", common.fmt_bytes(region_size), ", ".join(f"{mb:.1f}" for mb in region_mb),
         f"{sum(region_mb):.1f}"),
        ("list of dicts", f"(native; region would be {common.fmt_bytes(region_size)})",
         ", ".join(f"{mb:.1f}" for mb in lists_mb), f"{sum(lists_mb):.1f}"),
    ]
    for row in rows:
        print("  ".join(row), flush=True)
    plot = common.bar_plot(plots_dir, "fork_memory", f"Private memory gained by {workers} forked readers of "
                           f"{n:,} records", "MB per worker", [f"worker {i + 1}" for i in range(workers)],
                           {"region": region_mb, "list of dicts": lists_mb})
    lines = [
        f"`python benchmarks/bench_fork.py{'' if mode == 'full' else ' --' + mode}`: {n:,} tweet-like records, "
        f"{workers} forked workers (a `multiprocessing` fork pool) each reading one sample in {workers} through "
        "the datasets of `examples/dataloader.py`, after `gc.freeze()` in the parent. Growth of each worker's "
        "`Private_Dirty` over its reads, in MB.",
        "",
        *common.table(["held as", "size", "MB gained per worker", "MB gained, all workers"], ["l", "r", "r", "r"],
                      rows),
        "",
        common.plot_line(plot, "private memory per worker"),
    ]
    return common.Section("Fork memory of many readers", lines, [], [plot])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
