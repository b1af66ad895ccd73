"""The ``bale`` command (also ``python -m bale``).

    bale demo [--records N] [--keep DIR]

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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        print(f"{parser.prog}: missing command, one of: demo (see {parser.prog} --help)", file=sys.stderr)
        return 1
    try:
        if args.command == "demo":
            from bale import demo

            demo.run(records=args.records, keep=args.keep)
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


if __name__ == "__main__":
    sys.exit(main())
