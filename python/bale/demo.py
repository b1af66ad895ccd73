"""``python -m bale demo``: bale against pickle and json on a million records.

Generates tweet-like records, saves them with each format, and prints side
by side: time to save, to load, to read one record from the middle of the
file in a fresh process, to scan every record, ``gc.collect()`` with the data
alive, and the file size.
"""

from __future__ import annotations

import gc
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

import bale
from bale._datagen import tweets

# Child programs: time from just before opening the file to having the field.
_CHILD = {
    "pickle": "import pickle\nwith open(P, 'rb') as f: d = pickle.load(f)\nx = d[K]['user_id']",
    "json": "import json\nwith open(P, 'rb') as f: d = json.load(f)\nx = d[K]['user_id']",
    "bale": "import bale\nx = bale.open(P).root[K]['user_id']",
}


def _progress(label: str):
    tty = sys.stderr.isatty()
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        rate = done / max(time.perf_counter() - started, 1e-9)
        line = f"{label}: {done:,}/{total:,} records ({rate:,.0f}/s)"
        if tty:
            print("\r" + line, end="" if done < total else "\n", file=sys.stderr, flush=True)
        elif done == total or done % 250_000 == 0:
            print(line, file=sys.stderr, flush=True)

    return report


def _timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def _fresh_process_read(fmt: str, path: str, k: int) -> float:
    """Seconds from opening the file to holding record ``k``'s field, in a new interpreter."""
    prog = (
        "import time, bale, pickle, json\n"
        f"P = {path!r}\nK = {k}\n"
        "t0 = time.perf_counter()\n" + _CHILD[fmt] + "\nprint(time.perf_counter() - t0)\n"
    )
    out = subprocess.run([sys.executable, "-c", prog], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def _fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def run(records: int = 1_000_000, keep: str | None = None) -> None:
    data = tweets(records, progress=_progress("building dataset"))
    workdir = keep or tempfile.mkdtemp(prefix="bale-demo-")
    os.makedirs(workdir, exist_ok=True)
    paths = {fmt: os.path.join(workdir, f"tweets.{fmt}") for fmt in ("pickle", "json", "bale")}

    def save_pickle():
        with open(paths["pickle"], "wb") as f:
            pickle.dump(data, f, protocol=5)

    def save_json():
        with open(paths["json"], "w") as f:
            json.dump(data, f)

    def load_pickle():
        with open(paths["pickle"], "rb") as f:
            return pickle.load(f)

    def load_json():
        with open(paths["json"], "rb") as f:
            return json.load(f)

    steps = {
        "pickle": (save_pickle, load_pickle),
        "json": (save_json, load_json),
        "bale": (lambda: bale.compact(data).save(paths["bale"]), lambda: bale.open(paths["bale"])),
    }
    rows = {}
    # Move the generated records out of the GC's view, so that gc.collect()
    # below pays for what was loaded, as in a process that only loads.
    gc.collect()
    gc.freeze()
    try:
        for fmt, (save, load) in steps.items():
            print(f"measuring {fmt} ...", file=sys.stderr, flush=True)
            t_save, _ = _timed(save)
            t_load, loaded = _timed(load)
            root = loaded.root if fmt == "bale" else loaded
            t_scan, total = _timed(lambda: sum(len(t["hashtags"]) for t in root))
            t_gc, _ = _timed(gc.collect)
            t_one = min(_fresh_process_read(fmt, paths[fmt], records // 2) for _ in range(3))
            rows[fmt] = (t_save, t_load, t_one, t_scan, t_gc, os.path.getsize(paths[fmt]), total)
            del loaded, root
    finally:
        gc.unfreeze()
        if keep is None:
            for p in paths.values():
                if os.path.exists(p):
                    os.remove(p)
            os.rmdir(workdir)
    _print_table(records, rows)


def _print_table(records: int, rows: dict) -> None:
    headers = ["", "save", "load", "1 record, fresh process", "full scan", "gc.collect()", "file size"]
    lines = [headers]
    for fmt, (t_save, t_load, t_one, t_scan, t_gc, size, _) in rows.items():
        lines.append([fmt, _fmt_time(t_save), _fmt_time(t_load), _fmt_time(t_one), _fmt_time(t_scan), _fmt_time(t_gc), f"{size / 1e6:.1f} MB"])
    widths = [max(len(r[i]) for r in lines) for i in range(len(headers))]
    print(f"\n{records:,} tweet-like records")
    for j, r in enumerate(lines):
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
        if j == 0:
            print("  ".join("-" * w for w in widths))
    scans = {fmt: row[6] for fmt, row in rows.items()}
    assert len(set(scans.values())) == 1, f"formats disagree on the data: {scans}"
    print("\nsave: pickle.dump / json.dump / bale.compact + Region.save; load: pickle.load / json.load / bale.open")
    print("full scan: sum(len(t['hashtags']) for t in data); gc.collect(): with the loaded data alive")
