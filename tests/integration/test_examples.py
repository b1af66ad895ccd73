"""The examples run and print what they promise."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_dataloader_example_runs_and_compares_both_datasets():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dataloader.py"), "--samples", "20000", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "2 forked workers" in out
    assert "region (" in out and "list of dicts:" in out


def test_latency_benchmark_runs_end_to_end_on_small_trees():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_latency.py"), "--max-exp", "11", "--repeat", "1", "--no-report"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "bintree" in out and "pointtree" in out


def test_kv_server_benchmark_serves_both_ways():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "kv_server.py"), "--seconds", "0.5", "--clients", "2",
         "--sizes", "20", "--no-report"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    # The last line is the table's only row: | keys | bale req/s | pickle req/s | ratio |
    row = [c.strip() for c in out.strip().splitlines()[-1].strip("|").split("|")]
    keys, bale_rps, pickle_rps, ratio = row
    assert keys == "20" and float(bale_rps.replace(",", "")) > 0 and float(pickle_rps.replace(",", "")) > 0
