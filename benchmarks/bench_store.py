"""store's benchmark: encode and decode a million (int64, uint8, float64) records.

    python benchmarks/bench_store.py [--quick | --smoke] [--no-report]

The input is a list of 1,000,000 tuples ``(int64, uint8, float64)`` (200,000
with ``--quick``). Encode gives bytes (or a region), decode gives the list of
tuples back:

- bale: ``bale.compact`` / ``bale.thaw`` of the root; also reading the
  records in place (summing the float field through the views, and one
  field of each of 100,000 random records, ``root[k][2]``, against the
  native list);
- pickle (protocol 5): ``dumps`` / ``loads``;
- msgspec: ``msgspec.msgpack.Encoder().encode`` (tuples as arrays) /
  ``Decoder(list[tuple[int, int, float]]).decode``;
- struct: ``Struct("<qBd").pack_into`` one buffer of the precomputed size
  (as store does) / ``list(iter_unpack(...))``;
- numpy: ``np.array(records, dtype).tobytes()`` with a packed structured
  dtype / ``np.frombuffer`` (O(1), no Python objects) and ``.tolist()``.

Best of 5 runs after ``gc.collect()``, input frozen. Writes the section
"Vector of records" and ``plots/store_records.png``.
"""

from __future__ import annotations

import gc
import pickle
import random
import struct
import sys

import msgspec
import numpy as np

import bale
import common

COUNTS = {"smoke": 10_000, "quick": 200_000, "full": 1_000_000}
RECORD = struct.Struct("<qBd")
DTYPE = np.dtype([("id", "<i8"), ("flag", "u1"), ("value", "<f8")])  # packed: 17 bytes, as the struct


def records(n: int) -> list[tuple[int, int, float]]:
    rng = random.Random(8)
    return [(rng.getrandbits(64) - (1 << 63), rng.randrange(256), rng.random() * 1e6) for _ in range(n)]


def struct_encode(data: list[tuple[int, int, float]]) -> bytearray:
    size = RECORD.size
    out = bytearray(size * len(data))  # one allocation: fixed-size records make the size a multiplication
    pack_into = RECORD.pack_into
    for i, (a, b, c) in enumerate(data):
        pack_into(out, i * size, a, b, c)
    return out


def run(mode: str, plots_dir: str) -> common.Section:
    n = COUNTS[mode]
    data = records(n)
    encoder = msgspec.msgpack.Encoder()
    decoder = msgspec.msgpack.Decoder(list[tuple[int, int, float]])
    encoded = {
        "bale": bale.compact(data),
        "pickle": pickle.dumps(data, protocol=5),
        "msgspec": encoder.encode(data),
        "struct": struct_encode(data),
        "numpy": np.array(data, dtype=DTYPE).tobytes(),
    }
    decoders = {
        "bale": lambda: bale.thaw(encoded["bale"].root),
        "pickle": lambda: pickle.loads(encoded["pickle"]),
        "msgspec": lambda: decoder.decode(encoded["msgspec"]),
        "struct": lambda: list(RECORD.iter_unpack(encoded["struct"])),
        "numpy": lambda: np.frombuffer(encoded["numpy"], dtype=DTYPE).tolist(),
    }
    for name, decode in decoders.items():
        if decode() != data:
            raise SystemExit(f"{name}: decoding does not give the records back")
    encoders = {
        "bale": lambda: bale.compact(data),
        "pickle": lambda: pickle.dumps(data, protocol=5),
        "msgspec": lambda: encoder.encode(data),
        "struct": lambda: struct_encode(data),
        "numpy": lambda: np.array(data, dtype=DTYPE).tobytes(),
    }
    rng = random.Random(1)
    keys = [rng.randrange(n) for _ in range(100_000)]
    if [encoded["bale"].root[k][2] for k in keys] != [data[k][2] for k in keys]:
        raise SystemExit("bale: random reads through the views differ from the records")
    gc.collect()
    gc.freeze()
    try:
        t_enc = {name: common.best(f, 5) for name, f in encoders.items()}
        t_dec = {name: common.best(f, 5) for name, f in decoders.items()}
        view = encoded["bale"].root
        t_in_place = common.best(lambda: sum(r[2] for r in view), 5)
        t_native_scan = common.best(lambda: sum(r[2] for r in data), 5)
        t_read_view = common.best(lambda: [view[k][2] for k in keys], 5) / len(keys)
        t_read_native = common.best(lambda: [data[k][2] for k in keys], 5) / len(keys)
        t_frombuffer = common.per_call(lambda: np.frombuffer(encoded["numpy"], dtype=DTYPE))
    finally:
        gc.unfreeze()
    sizes = {name: e.nbytes if name == "bale" else len(e) for name, e in encoded.items()}
    rows = [(name, common.fmt_time(t_enc[name]), common.fmt_time(t_dec[name]), f"{sizes[name]:,}",
             f"{sizes[name] / n:.1f}",
             common.fmt_ratio(t_enc[name] / t_enc["pickle"]), common.fmt_ratio(t_dec[name] / t_dec["pickle"]))
            for name in encoders]
    for row in rows:
        print("  ".join(row), flush=True)
    names = list(encoders)
    plot = common.bar_plot(plots_dir, "store_records", f"{n:,} (int64, uint8, float64) records", "seconds",
                           names, {"encode": [t_enc[k] for k in names], "decode to tuples": [t_dec[k] for k in names]},
                           logy=True)
    lines = [
        f"`python benchmarks/bench_store.py{'' if mode == 'full' else ' --' + mode}`: {n:,} tuples "
        "(int64, uint8, float64). Decoding gives the list of tuples back (checked equal). struct packs into one "
        "buffer of the precomputed size; numpy uses a packed structured dtype (17 bytes a record). Best of 5.",
        "",
        *common.table(["format", "encode", "decode to tuples", "bytes", "bytes / record", "encode / pickle",
                       "decode / pickle"], ["l", "r", "r", "r", "r", "r", "r"], rows),
        "",
        f"Without building Python objects: `np.frombuffer` takes {common.fmt_time(t_frombuffer)}; summing the "
        f"float field through the region's views (`sum(r[2] for r in root)`) takes {common.fmt_time(t_in_place)}, "
        f"against {common.fmt_time(t_native_scan)} over the native list ({t_in_place / t_native_scan:.2f}x). "
        f"One field of a random record (`root[k][2]`, {len(keys):,} random k): {common.fmt_time(t_read_view)} "
        f"per read through the views, {common.fmt_time(t_read_native)} on the native list "
        f"({t_read_view / t_read_native:.2f}x).",
        "",
        common.plot_line(plot, "encode and decode times"),
    ]
    return common.Section("Vector of records (store's benchmark)", lines, [], [plot])


def main(argv: list[str] | None = None) -> int:
    return common.bench_main(argv, __doc__, run)


if __name__ == "__main__":
    sys.exit(main())
