"""Writes tweet-like records (``bale._datagen.tweets``) as one JSON array,
or as JSON Lines, of at least a given size, in bounded memory: for the
memory figures of ``bale convert`` on large inputs.

    python benchmarks/gen_tweets_json.py OUT.json --mb 520 [--lines]
"""

from __future__ import annotations

import argparse
import json

from bale._datagen import tweets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=520)
    ap.add_argument("--lines", action="store_true", help="JSON Lines instead of one array")
    args = ap.parse_args()
    target = int(args.mb * 1e6)
    size = 0
    seed = 0
    first = True
    with open(args.out, "w", encoding="utf-8") as f:
        if not args.lines:
            f.write("[\n")
        while size < target:
            for rec in tweets(50_000, seed=seed):
                text = json.dumps(rec, separators=(",", ":"))
                if args.lines:
                    f.write(text + "\n")
                else:
                    f.write(("" if first else ",\n") + text)
                first = False
                size += len(text) + 2
            seed += 1
        if not args.lines:
            f.write("\n]\n")
    print(f"{args.out}: {size:,} bytes")


if __name__ == "__main__":
    main()
