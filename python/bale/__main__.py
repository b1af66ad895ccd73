"""The ``bale`` command (also ``python -m bale``).

    bale convert INPUT OUTPUT [--from FORMAT] [--unsafe-pickle] [--csv-types json|none] [--csv-column-type NAME=TYPE ...]
    bale info FILE [--verify]
    bale get FILE POINTER [--raw]
    bale to-json FILE [POINTER]
    bale verify FILE
    bale demo [--records N] [--keep DIR]
    bale bench [--quick | --smoke] [--only NAME ...] [...]   (from a checkout of the repository)

Errors are reported as one line on stderr with exit status 1, never as a
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys


def _positive_records(text: str) -> int:
    try:
        n = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 2:
        raise argparse.ArgumentTypeError("must be at least 2")
    return n


def _column_type(text: str) -> tuple[str, str]:
    """``NAME=TYPE`` of ``--csv-column-type`` (the last ``=`` splits, so names may hold one)."""
    from bale.cli import CSV_COLUMN_TYPES

    name, sep, kind = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=TYPE, got {text!r}")
    if kind not in CSV_COLUMN_TYPES:
        raise argparse.ArgumentTypeError(f"{text!r}: unknown type {kind!r}, one of {', '.join(CSV_COLUMN_TYPES)}")
    return name, kind


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr and exit status 1."""

    def error(self, message: str):
        self.exit(1, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bale",
        description="Compact regions for Python: immutable data in one position-independent "
        "buffer, used in place, sent as bytes and memory-mapped from files.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = commands.add_parser(
        "demo",
        help="compare bale with pickle and json on generated tweet-like records",
        description="Generate tweet-like records and compare bale with pickle (protocol 5) and "
        "json: time to save, to load, to read one record in a fresh process, to scan every "
        "record, gc.collect() with the data alive, and the file size.",
    )
    demo.add_argument(
        "--records",
        type=_positive_records,
        default=1_000_000,
        metavar="N",
        help="number of records (default 1,000,000)",
    )
    demo.add_argument("--keep", metavar="DIR", help="write the files to DIR and keep them")

    conv = commands.add_parser(
        "convert",
        help="convert JSON, JSON Lines, MessagePack, CSV (or pickle) to a region file",
        description="Convert INPUT to the region file OUTPUT. The format comes from INPUT's "
        "extension (.json, .jsonl/.ndjson, .msgpack/.mpk, .csv, .pkl/.pickle) or --from. JSON "
        "Lines, CSV and a .json file's top-level array or object stream item by item (memory "
        "stays bounded by the largest item); records of one key sequence are stored by column, "
        "as a table, as bale.compact stores them (the columns are gathered in a temporary file "
        "beside OUTPUT). CSV rows become dicts: by default a cell that is a JSON number (12, "
        "-0.5e3; not 00501, 1_000, ' 12 ', nan or Infinity) becomes an int or a float, an empty "
        "cell None, and every other cell stays text. Malformed JSON is named by line, column and "
        "element index. OUTPUT appears only when complete.",
    )
    conv.add_argument("input", metavar="INPUT")
    conv.add_argument("output", metavar="OUTPUT")
    conv.add_argument("--from", dest="fmt", choices=sorted(set(cli_formats())), help="input format")
    conv.add_argument("--unsafe-pickle", action="store_true", help="allow pickle input (it runs code from the file)")
    conv.add_argument(
        "--csv-types",
        choices=("json", "none"),
        default="json",
        help="CSV cells of columns without a declared type: 'json' (default) makes JSON numbers ints "
        "and floats and empty cells None; 'none' keeps every cell as text (an empty cell is '')",
    )
    conv.add_argument(
        "--csv-column-type",
        action="append",
        type=_column_type,
        default=[],
        metavar="NAME=TYPE",
        help="declare the type of a CSV column (repeatable): int (sign and digits, leading zeros "
        "allowed), float (what float() reads: nan, inf, 1e400 as inf), bool (true, false, 1, 0), "
        "str (the text as is); an empty cell is None except in str columns; a cell that does not "
        "parse stops the conversion, naming its line and column",
    )

    info = commands.add_parser("info", help="describe a region file", description="Format version, size, root, counts and bytes per kind of value, and the most used dict shapes.")
    info.add_argument("file", metavar="FILE")
    info.add_argument("--verify", action="store_true", help="also check the checksum and structure (O(n))")

    get = commands.add_parser("get", help="print the value at a JSON Pointer as JSON", description="Print the value at POINTER (RFC 6901, e.g. /500000/hashtags/0; '' is the root) as JSON.")
    get.add_argument("file", metavar="FILE")
    get.add_argument("pointer", metavar="POINTER")
    get.add_argument("--raw", action="store_true", help="print a string value without quotes")

    tojson = commands.add_parser("to-json", help="write the region (or a sub-value) as JSON", description="Write JSON for the whole region, or for the value at POINTER, to standard output; lists are converted item by item. Nothing is written when any part of the value has no JSON form (NaN, infinities, bytes, sets, ...): the error names its place, like root[1][\"a\"], and the exit status is 1. Lists are checked whole before their first byte is written (beyond 32 MB of JSON, the rest is converted twice: once to check it, once to write it).")
    tojson.add_argument("file", metavar="FILE")
    tojson.add_argument("pointer", metavar="POINTER", nargs="?", default="")

    commands.add_parser(
        "bench",
        help="run the benchmark suite (from a checkout of the repository)",
        usage="%(prog)s [--quick | --smoke] [--only NAME ...] [--report PATH] [--no-report]",
        description="Run benchmarks/run_all.py of the bale repository found in this directory or "
        "above it, with these arguments passed on: --quick (smaller data), --smoke (every benchmark at its "
        "smallest size), --only NAME ... (some benchmarks; the others' last results stay in the report), "
        "--report PATH, --no-report. It writes benchmarks/REPORT.md, REPORT.json and plots/. The benchmarks are "
        "not installed with the package.",
    )

    ver = commands.add_parser("verify", help="check a region file fully", description="Check the checksum and the whole structure. Exit status 0 when valid; 1 with the first problem named.")
    ver.add_argument("file", metavar="FILE")

    store = commands.add_parser("store", help="inspect or maintain a bale.Store", description="Commands on a store made by bale.Store (a directory).")
    store_commands = store.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    for name, text in (
        ("info", "values, labels, segments, index files and disk use"),
        ("keys", "print every live key, one per line (bytes keys as b'...')"),
        ("verify", "check both superblocks' newest commit, every segment byte against its checksum, the index files and every live value read in full; exit status 1 with the first problem named"),
        ("reclaim", "return the disk space of dead data (rewrites segments at most half live, merges the index, removes files no commit names)"),
    ):
        sub = store_commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        sub.add_argument("path", metavar="PATH")
    sget = store_commands.add_parser("get", help="print a stored value (or the value at a JSON Pointer inside it) as JSON", description="Print the value stored under KEY, or the value at POINTER inside it (RFC 6901, e.g. /tags/0), as JSON. A key written b'...' is a bytes key.")
    sget.add_argument("path", metavar="PATH")
    sget.add_argument("key", metavar="KEY")
    sget.add_argument("pointer", metavar="POINTER", nargs="?", default="")
    sget.add_argument("--raw", action="store_true", help="print a string value without quotes")
    return parser


def cli_formats() -> list[str]:
    from bale.cli import FORMATS

    return list(FORMATS.values())


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    # Arguments that bale does not know are kept for `bale bench`, which passes them to run_all.py.
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "bench":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    if args.command is None:
        print(f"{parser.prog}: missing command, one of: convert, info, get, to-json, verify, store, demo, bench (see {parser.prog} --help)", file=sys.stderr)
        return 1
    try:
        if args.command == "demo":
            from bale import demo

            demo.run(records=args.records, keep=args.keep)
        else:
            _run(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        print(f"bale {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `bale demo | head`): point
        # stdout at /dev/null so that the exit-time flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as e:  # one line, no traceback
        message = str(e) or type(e).__name__
        print(f"bale {args.command}: {message.splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def _run(args: argparse.Namespace) -> None:
    from bale import cli

    out = sys.stdout.buffer
    if args.command == "convert":
        declared: dict[str, str] = {}
        for name, kind in args.csv_column_type:
            if declared.setdefault(name, kind) != kind:
                raise cli.CommandError(f"--csv-column-type declares column {name!r} twice ({declared[name]} and {kind})")
        summary = cli.convert(
            args.input, args.output, args.fmt, args.unsafe_pickle, csv_types=args.csv_types, csv_column_types=declared
        )
        print(summary, file=sys.stderr)
    elif args.command == "info":
        cli.info(args.file, args.verify, sys.stdout)
    elif args.command == "get":
        cli.get(args.file, args.pointer, args.raw, out)
    elif args.command == "to-json":
        cli.to_json(args.file, args.pointer, out)
    elif args.command == "verify":
        cli.verify(args.file, sys.stdout)
    elif args.command == "store":
        if args.store_command == "info":
            cli.store_info(args.path, sys.stdout)
        elif args.store_command == "keys":
            cli.store_keys(args.path, sys.stdout)
        elif args.store_command == "get":
            cli.store_get(args.path, args.key, args.pointer, args.raw, out)
        elif args.store_command == "verify":
            cli.store_verify(args.path, sys.stdout)
        elif args.store_command == "reclaim":
            cli.store_reclaim(args.path, sys.stdout)
    elif args.command == "bench":
        code = cli.bench(args.extra)
        if code:
            raise cli.CommandError(f"some benchmarks failed (exit status {code})")
    out.flush()


if __name__ == "__main__":
    sys.exit(main())
