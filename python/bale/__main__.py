"""The ``bale`` command (also ``python -m bale``)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bale", description="Compact regions for Python.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="compare bale with pickle and json on generated tweet-like records",
        description="Generate tweet-like records and compare bale with pickle and json: "
        "save, load, one record in a fresh process, full scan, gc.collect(), file size.",
    )
    demo.add_argument("--records", type=int, default=1_000_000, help="number of records (default 1,000,000)")
    demo.add_argument("--keep", metavar="DIR", help="write the files to DIR and keep them")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "demo":
            from bale import demo as demo_module

            if args.records < 2:
                raise ValueError("--records must be at least 2")
            demo_module.run(args.records, args.keep)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (OSError, ValueError, TypeError) as e:
        print(f"bale {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
