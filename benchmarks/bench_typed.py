"""Typed values and records: bytes per record, and speed against the anchors.

    python benchmarks/bench_typed.py [--quick | --smoke] [--no-report]

Measures, in one run on data it generates (and on ../shared/data/json):

- bytes: tweet-like records (the brief's 1M records), the same records as
  dataclasses, and each corpus file, as a bale region, pickle (protocol 5),
  msgspec.msgpack and the JSON text (orjson); bytes per record where the
  file is a list of records;
- time to compact / encode and to thaw / decode 1M dataclass records
  (int, str, float, date, Decimal) against pickle and msgspec (with a
  msgspec.Struct of the same fields);
- a numpy array (100 MB float32) in a region: compact, and the zero-copy
  read against pickle.loads;
- number lists: 1M floats as a list, np.asarray of the view against
  np.array of the native list.

Writes the section "Typed values and records". ``--quick`` uses 100k
records and a 10 MB array; ``--smoke`` 2,000 records and a 1 MB array.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import gc
import json
import pathlib
import pickle
import sys

import msgspec
import numpy as np
import orjson

import bale
import common
from bale._datagen import tweets
from bale._fmt import duration as fmt_time

CORPUS = pathlib.Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "json"
SIZES = {"smoke": (2_000, 1), "quick": (100_000, 10), "full": (1_000_000, 100)}  # records, MB of array


@dataclasses.dataclass
class Trade:
    id: int
    symbol: str
    price: float
    day: dt.date
    amount: decimal.Decimal


class TradeStruct(msgspec.Struct):
    id: int
    symbol: str
    price: float
    day: dt.date
    amount: decimal.Decimal


def trades(n: int) -> list[Trade]:
    symbols = ["AAPL", "MSFT", "GOOGLE", "AMAZON", "NVIDIA", "TSLA"]
    d0 = dt.date(2020, 1, 1)
    return [Trade(i, symbols[i % 6], 100 + (i % 997) / 8, d0 + dt.timedelta(days=i % 1000),
                  decimal.Decimal(i % 10007) / 100) for i in range(n)]


def sizes(name: str, value, count: int | None) -> tuple[str, ...]:
    b = bale.compact(value).nbytes
    p = len(pickle.dumps(value, protocol=5))
    try:
        m = len(msgspec.msgpack.encode(value))
    except TypeError:
        m = None
    try:
        j = len(orjson.dumps(value))
    except TypeError:
        j = None

    def per(x):
        if x is None:
            return "-"
        return f"{x / count:,.1f}" if count else f"{x:,}"

    ratio = f"{b / p:.2f}x"
    return (name, f"{count:,}" if count else "-", per(b), per(p), per(m), per(j), ratio)


def run(mode: str, plots_dir: str) -> common.Section:
    n, mb = SIZES[mode]
    lines: list[str] = []

    # ---------------------------------------------------------------- bytes
    rows = []
    tw = tweets(n)
    rows.append(sizes("tweet-like records (dicts)", tw, n))
    tr = trades(n)
    rows.append(sizes("trades (dataclasses)", tr, n))
    for path in sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []:
        value = json.loads(path.read_bytes())
        count = len(value) if isinstance(value, list) else None
        for key in ("statuses", "features", "events"):
            if count is None and isinstance(value, dict) and isinstance(value.get(key), list):
                count = len(value[key])
        rows.append(sizes(path.name, value, count))
    lines += [
        "Bytes per record (or per file when it is not a list of records), in one region, against pickle",
        "(protocol 5), msgspec.msgpack and JSON (orjson); the ratio is bale over pickle.",
        "",
        *common.table(["data", "records", "bale", "pickle", "msgspec", "JSON", "bale/pickle"],
                      ["l", "r", "r", "r", "r", "r", "r"], rows),
        "",
    ]
    print("\n".join(lines))

    # --------------------------------------------------------- record speed
    structs = [TradeStruct(t.id, t.symbol, t.price, t.day, t.amount) for t in tr]
    enc = msgspec.msgpack.Encoder()
    dec = msgspec.msgpack.Decoder(list[TradeStruct])
    gc.collect()
    t_compact = common.best(lambda: bale.compact(tr), 3)
    t_pickle = common.best(lambda: pickle.dumps(tr, protocol=5), 3)
    t_msgspec = common.best(lambda: enc.encode(structs), 3)
    region = bale.compact(tr)
    blob = pickle.dumps(tr, protocol=5)
    packed = enc.encode(structs)
    if bale.thaw(region.root) != tr or dec.decode(packed) != structs or pickle.loads(blob) != tr:
        raise SystemExit("the trades do not come back equal from bale, msgspec or pickle")
    t_thaw = common.best(lambda: bale.thaw(region.root), 3)
    t_loads = common.best(lambda: pickle.loads(blob), 3)
    t_decode = common.best(lambda: dec.decode(packed), 3)
    root = region.root
    k = n // 2
    t_field = common.best(lambda: [root[i].price for i in range(k, k + 1000)], 5) / 1000
    t_field_native = common.best(lambda: [tr[i].price for i in range(k, k + 1000)], 5) / 1000
    rows = [
        ("compact / dumps / encode", fmt_time(t_compact), fmt_time(t_pickle), fmt_time(t_msgspec),
         f"{t_compact / t_pickle:.2f}x", f"{t_compact / t_msgspec:.2f}x"),
        ("thaw / loads / decode", fmt_time(t_thaw), fmt_time(t_loads), fmt_time(t_decode),
         f"{t_thaw / t_loads:.2f}x", f"{t_thaw / t_decode:.2f}x"),
    ]
    sect = [
        f"{n:,} dataclass records (int, str, float, date, Decimal); msgspec encodes a Struct of the same fields.",
        "",
        *common.table(["operation", "bale", "pickle", "msgspec", "vs pickle", "vs msgspec"],
                      ["l", "r", "r", "r", "r", "r"], rows),
        "",
        f"Reading one field through a record view (`root[i].price`): {t_field * 1e9:.0f} ns "
        f"(native dataclass: {t_field_native * 1e9:.0f} ns).",
        "",
    ]
    print("\n".join(sect))
    lines += sect

    # ----------------------------------------------------------------- numpy
    arr = np.random.default_rng(0).random((mb * 1024 * 1024 // 4 // 256, 256), dtype=np.float32)
    t_arr_compact = common.best(lambda: bale.compact({"w": arr}), 3)
    t_arr_pickle = common.best(lambda: pickle.dumps(arr, protocol=5), 3)
    ar = bale.compact({"w": arr})
    arr_blob = pickle.dumps(arr, protocol=5)
    aroot = ar.root
    if not np.array_equal(aroot["w"], arr):
        raise SystemExit("the array read from the region differs from the original")
    t_arr_view = common.best(lambda: [aroot["w"] for _ in range(1000)], 5) / 1000
    t_arr_loads = common.best(lambda: pickle.loads(arr_blob), 3)
    floats = [x / 3 for x in range(n)]
    fr = bale.compact(floats)
    froot = fr.root
    if np.asarray(froot).tolist() != floats:
        raise SystemExit("np.asarray of the number list's view differs from the list")
    t_asarray = common.best(lambda: [np.asarray(froot) for _ in range(1000)], 5) / 1000
    t_np_array = common.best(lambda: np.array(floats), 3)
    sect = [
        f"A {arr.nbytes / 2**20:.0f} MB float32 array: compact {fmt_time(t_arr_compact)} "
        f"(pickle.dumps {fmt_time(t_arr_pickle)}); reading it back as an ndarray over the region "
        f"{fmt_time(t_arr_view)} (pickle.loads {fmt_time(t_arr_loads)}, a copy).",
        "",
        f"A list of {n:,} floats: {fr.nbytes / n:.1f} bytes per item in the region; `np.asarray(view)` "
        f"{fmt_time(t_asarray)} (zero copy) against `np.array(list)` {fmt_time(t_np_array)}.",
        "",
    ]
    print("\n".join(sect))
    lines += sect
    lines.insert(0, f"`python benchmarks/bench_typed.py{'' if mode == 'full' else ' --' + mode}`.")
    lines.insert(1, "")
    return common.Section("Typed values and records", lines, [], [])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
