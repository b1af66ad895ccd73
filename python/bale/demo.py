"""``python -m bale demo``: bale against pickle and json on tweet-like records.

Generates tweet-like records (``bale._datagen.tweets``), saves them with each
format and prints, side by side:

- **save**: ``pickle.dump`` (protocol 5), ``json.dumps`` + write (the C
  encoder; ``json.dump`` would use the much slower pure-Python one),
  ``bale.compact`` + ``Region.save``;
- **load**: ``pickle.load``, ``json.load``, ``bale.open`` (memory-mapped);
- **1 record, fresh process**: a new interpreter, timed from just before
  opening the file to holding ``data[n // 2]["user_id"]`` (imports excluded);
- **full scan**: ``sum(len(t["hashtags"]) for t in data)`` over the loaded
  data (for bale, over ``bale.open(path).root``);
- **gc.collect()** with the loaded data alive (for bale only the region);
- **file size**.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

import bale
from bale._fmt import duration
from bale._datagen import tweets

FORMATS = ("pickle", "json", "bale")

# Child programs: P is the path, K the record index; x must end up holding
# the field. Timed from just before the file is opened to just after.
_CHILD = {
    "pickle": "with open(P, 'rb') as f:\n    d = pickle.load(f)\nx = d[K]['user_id']",
    "json": "with open(P, 'rb') as f:\n    d = json.load(f)\nx = d[K]['user_id']",
    "bale": "x = bale.open(P).root[K]['user_id']",
}


def _progress(label: str):
    """A progress callback: a rewritten line on a terminal, a few plain lines otherwise."""
    tty = sys.stderr.isatty()
    started = time.perf_counter()
    printed = [0]

    def report(done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        line = f"{label}: {done:,}/{total:,} records ({done / max(elapsed, 1e-9):,.0f}/s)"
        if tty:
            end = "\n" if done >= total else ""
            print(f"\r{line}\x1b[K", end=end, file=sys.stderr, flush=True)
        elif done >= total or done >= printed[0] + max(total // 4, 1):
            printed[0] = done
            print(line, file=sys.stderr, flush=True)

    return report


def _status(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def _fresh_process_read(fmt: str, path: str, k: int, expected: int) -> float:
    """Seconds from opening the file to holding record ``k``'s user_id, in a new interpreter."""
    prog = (
        "import json, pickle, sys, time\nimport bale\n"
        f"P = {path!r}\nK = {k}\n"
        "t0 = time.perf_counter()\n"
        f"{_CHILD[fmt]}\n"
        "t1 = time.perf_counter()\n"
        "print(t1 - t0, x)\n"
    )
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{fmt} child process failed: {last}")
    seconds, value = proc.stdout.split()
    if int(value) != expected:
        raise RuntimeError(f"{fmt} child process read user_id {value}, expected {expected}")
    return float(seconds)


def _fmt_size(n: int) -> str:
    if n < 1e6:
        return f"{n / 1e3:.1f} kB"
    return f"{n / 1e6:.1f} MB"


def _gc_time() -> float:
    """Best of two full collections (the first may still be moving young objects)."""
    return min(_timed(gc.collect)[0] for _ in range(2))


def run(records: int = 1_000_000, keep: str | None = None) -> dict:
    """Run the demo and print the table; returns the figures by format."""
    if records < 2:
        raise ValueError("records must be at least 2")
    data = tweets(records, progress=_progress("building dataset"))
    if keep is not None:
        os.makedirs(keep, exist_ok=True)
        workdir = keep
    else:
        workdir = tempfile.mkdtemp(prefix="bale-demo-")
    paths = {fmt: os.path.join(workdir, f"tweets.{fmt}") for fmt in FORMATS}
    middle = records // 2
    expected_id = data[middle]["user_id"]
    expected_scan = sum(len(t["hashtags"]) for t in data)

    def save_pickle():
        with open(paths["pickle"], "wb") as f:
            pickle.dump(data, f, protocol=5)

    def save_json():
        text = json.dumps(data)
        with open(paths["json"], "w", encoding="utf-8") as f:
            f.write(text)

    def save_bale():
        bale.compact(data).save(paths["bale"])

    def load_pickle():
        with open(paths["pickle"], "rb") as f:
            return pickle.load(f)

    def load_json():
        with open(paths["json"], "rb") as f:
            return json.load(f)

    def load_bale():
        return bale.open(paths["bale"])

    steps = {
        "pickle": (save_pickle, load_pickle),
        "json": (save_json, load_json),
        "bale": (save_bale, load_bale),
    }
    rows: dict[str, dict] = {}
    # The generated records stay alive throughout; freezing them moves them
    # out of the collector's view, so each gc.collect() below pays only for
    # what was loaded, as in a process that only loads.
    gc.collect()
    gc.freeze()
    try:
        for fmt, (save, load) in steps.items():
            _status(f"measuring {fmt} ...")
            t_save, _ = _timed(save)
            t_load, loaded = _timed(load)
            root = loaded.root if fmt == "bale" else loaded
            t_scan, total = _timed(lambda: sum(len(t["hashtags"]) for t in root))
            if total != expected_scan:
                raise RuntimeError(f"{fmt}: full scan gave {total}, expected {expected_scan}")
            t_gc = _gc_time()
            del loaded, root
            gc.collect()
            t_one = min(_fresh_process_read(fmt, paths[fmt], middle, expected_id) for _ in range(3))
            rows[fmt] = {
                "save": t_save,
                "load": t_load,
                "one": t_one,
                "scan": t_scan,
                "gc": t_gc,
                "size": os.path.getsize(paths[fmt]),
            }
    finally:
        gc.unfreeze()
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    _print_table(records, rows, keep and workdir)
    return rows


def _print_table(records: int, rows: dict, kept: str | None) -> None:
    columns = [
        ("save", "save", duration),
        ("load", "load", duration),
        ("1 record, fresh process", "one", duration),
        ("full scan", "scan", duration),
        ("gc.collect()", "gc", duration),
        ("file size", "size", _fmt_size),
    ]
    lines = [[""] + [title for title, _, _ in columns]]
    for fmt, row in rows.items():
        lines.append([fmt] + [fmt_value(row[key]) for _, key, fmt_value in columns])
    widths = [max(len(r[i]) for r in lines) for i in range(len(lines[0]))]

    def show(r):
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))

    print(f"\n{records:,} tweet-like records, Python {sys.version.split()[0]}\n")
    show(lines[0])
    print("  ".join("-" * w for w in widths))
    for r in lines[1:]:
        show(r)

    if "bale" in rows and "pickle" in rows:
        b, p = rows["bale"], rows["pickle"]

        def times(key):
            return f"{p[key] / b[key]:,.0f}x" if b[key] > 0 else "-"

        print(
            f"\nbale vs pickle: load {times('load')} faster, one record in a fresh process "
            f"{times('one')} faster, gc.collect() {times('gc')} faster."
        )
    print(
        "\nsave: pickle.dump(protocol=5) / json.dumps + write / bale.compact + Region.save."
        "\nload: pickle.load / json.load / bale.open (memory-mapped: pages are read on access)."
        "\n1 record: a new interpreter, from opening the file to data[n // 2]['user_id'] (best of 3)."
        "\nfull scan: sum(len(t['hashtags']) for t in data); gc.collect(): with the loaded data alive."
    )
    if kept:
        print(f"\nfiles kept in {kept}")
