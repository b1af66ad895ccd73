"""Shared by the benchmark scripts: timing, the machine, targets, plots, REPORT.md sections.

Each suite module (``bench_*.py`` run by ``run_all.py``) has a ``run(mode,
plots_dir)`` that returns a :class:`Section`: its Markdown lines, the
issue's targets it measured and the plots it drew. ``bench_main`` gives
every module the same command line (``--quick``, ``--smoke``,
``--no-report``, ``--json``, ``--plots``).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "REPORT.md")
PLOTS = os.path.join(HERE, "plots")
MODES = ("smoke", "quick", "full")


def report_path(mode: str = "full") -> str:
    """Where a run in ``mode`` writes its report (plots beside it, in plots/).

    BALE_BENCH_REPORT names the file when set. Otherwise a full run updates
    the committed benchmarks/REPORT.md; smoke and quick runs, whose figures
    are not the report's, write to ``$TMPDIR/bale-bench-MODE/REPORT.md`` and
    leave every tracked file alone.
    """
    given = os.environ.get("BALE_BENCH_REPORT")
    if given:
        return given
    if mode == "full":
        return REPORT
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"bale-bench-{mode}", "REPORT.md")


def check_report_path(path: str, mode: str) -> None:
    """Refuses to let a smoke or quick run write the committed report or its plots."""
    if mode == "full":
        return
    committed = {os.path.realpath(p) for p in (REPORT, os.path.splitext(REPORT)[0] + ".json")}
    if os.path.realpath(path) in committed or os.path.realpath(os.path.dirname(path)) == os.path.realpath(PLOTS):
        raise SystemExit(f"a --{mode} run does not write the committed report ({path}): its figures are not the "
                         "report's; drop --report (it then writes to a temporary folder) or run in full mode")


# --- Markdown ----------------------------------------------------------------------


def table(header: list[str], align: list[str], rows: list[tuple[str, ...]]) -> list[str]:
    """A Markdown table; ``align`` holds "l" or "r" per column."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def split_sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The lines before the first ``## `` heading, and each ``## title`` with its body lines."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:], []))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return head, sections


def write_section(title: str, lines: list[str], path: str | None = None) -> None:
    """Replace (or append) the section ``## title`` of the report at ``path`` with ``lines``."""
    path = path or report_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = open(path).read() if os.path.exists(path) else "# Benchmark report\n"
    head, sections = split_sections(text)
    body = ["", *lines, ""]
    if any(t == title for t, _ in sections):
        sections = [(t, body if t == title else b) for t, b in sections]
    else:
        sections.append((title, body))
    out = list(head)
    for t, b in sections:
        out += [f"## {t}", *b]
    with open(path, "w") as f:
        f.write("\n".join(out).rstrip("\n") + "\n")
    print(f"wrote {path}")


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Exactly ``n`` bytes from ``sock`` into one buffer."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("peer closed")
        got += k
    return buf


# --- timing ------------------------------------------------------------------------


def best_gc_off(f: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``f()`` over ``repeat`` runs, the GC disabled during each call and
    its result dropped after the clock is read (the A/B scripts' measure)."""
    b = float("inf")
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        x = f()
        b = min(b, time.perf_counter() - t0)
        del x
        gc.enable()
    return b


def best(f: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time of ``f()`` over ``repeat`` runs, each after a gc.collect()."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_interleaved(fs: dict[str, Callable[[], object]], repeat: int = 5, *,
                     keep_results: bool = False) -> dict[str, float]:
    """Best wall time of each function, the functions taking turns ``repeat`` times.

    On a shared machine the load drifts over the seconds a benchmark takes;
    taking turns puts bale and each baseline under the same drift, so their
    ratio is steadier than that of minima taken one after the other. The
    order is shuffled each turn (the same shuffles in every run), so that
    no function always runs right after the same other one and after what
    it leaves behind: a freed heap, evicted caches, an allocator's
    background threads. With ``keep_results`` each result is held until
    the clock has been read, so that freeing it is not timed (by default
    the time includes dropping what the function returned).
    """
    times = {name: float("inf") for name in fs}
    names = list(fs)
    for turn in range(repeat):
        if turn:
            random.Random(turn).shuffle(names)
        for name in names:
            f = fs[name]
            gc.collect()
            t0 = time.perf_counter()
            if keep_results:
                result = f()
                elapsed = time.perf_counter() - t0
                del result
            else:
                f()
                elapsed = time.perf_counter() - t0
            times[name] = min(times[name], elapsed)
    return times


def gc_off(f: Callable[[], object]) -> Callable[[], object]:
    """``f`` run with the cyclic GC disabled (and its state restored after).

    ``bale.thaw`` turns the GC off inside itself; a decoder compared with
    it runs under the same condition through this, so that the ratio
    compares the decoders, not the GC's work on what they build.
    """
    def run() -> object:
        was = gc.isenabled()
        gc.disable()
        try:
            return f()
        finally:
            if was:
                gc.enable()

    return run


def per_call(f: Callable[[], object], repeat: int = 5, sample: float = 0.02) -> float:
    """Best time per call of ``f()``: ``repeat`` samples of as many calls as fill ``sample`` seconds.

    For operations far below a timer tick: the call count doubles until one
    sample lasts ``sample`` seconds, as ``timeit``'s autorange does.
    """
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        elapsed = time.perf_counter() - t0
        if elapsed >= sample or number >= 1 << 24:
            break
        number *= 2
    samples = [elapsed / number]
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            f()
        samples.append((time.perf_counter() - t0) / number)
    return min(samples)


def fmt_time(seconds: float) -> str:
    """A duration in the unit that suits it (the demo's formatting)."""
    from bale._fmt import duration

    return duration(seconds)


def fmt_ratio(r: float) -> str:
    if r < 0.001:
        return f"{r:.1e}x"
    if r < 0.1:
        return f"{r:.3f}x"
    return f"{r:.2f}x"


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


# --- the machine -------------------------------------------------------------------


def _first_line_with(path: str, prefix: str) -> str | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _version(dist: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, str]:
    """What the figures depend on: CPU, cores, RAM, OS, Python, and the versions compared."""
    import platform  # here, not at the top: children that import common keep a small heap for gc timings

    mem_kb = _first_line_with("/proc/meminfo", "MemTotal")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "CPU": _first_line_with("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "cores": f"{os.cpu_count()} ({usable} usable by this process)",
        "RAM": f"{int(mem_kb.split()[0]) / 1024**2:.1f} GiB" if mem_kb else "unknown",
        "OS": platform.platform(),
        "Python": f"{platform.python_version()} ({platform.python_implementation()})",
        "bale": _version("bale"),
        "anchors": ", ".join(f"{d} {_version(d)}" for d in ("msgspec", "orjson", "pyarrow", "numpy")),
        "plots": f"matplotlib {_version('matplotlib')} (Agg)",
    }


def machine_lines() -> list[str]:
    return [f"- **{k}**: {v}" for k, v in machine().items()]


# --- targets and sections ------------------------------------------------------------


@dataclasses.dataclass
class Target:
    """One target of the issue as measured in this run; ``met`` is None when not measured."""

    what: str
    goal: str
    measured: str
    anchor: str = ""
    ratio: str = ""
    met: bool | None = None
    source: str = ""

    def row(self) -> tuple[str, ...]:
        verdict = "not measured" if self.met is None else ("met" if self.met else "**NOT MET**")
        return (self.what, self.goal, self.measured, self.anchor, self.ratio, verdict, self.source)


def ratio_target(what: str, goal_ratio: float, ours: float, anchor: float, anchor_name: str,
                 source: str) -> Target:
    """A target "bale's time <= goal_ratio x the anchor's time", both measured in this run."""
    r = ours / anchor
    return Target(what, f"<= {goal_ratio:g}x {anchor_name}", fmt_time(ours), f"{fmt_time(anchor)} ({anchor_name})",
                  fmt_ratio(r), r <= goal_ratio, source)


def targets_table(targets: list[Target]) -> list[str]:
    return table(["target", "goal", "bale", "anchor", "ratio", "verdict", "measured by"],
                 ["l", "l", "r", "r", "r", "l", "l"], [t.row() for t in targets])


@dataclasses.dataclass
class Section:
    title: str
    lines: list[str]
    targets: list[Target] = dataclasses.field(default_factory=list)
    plots: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Section:
        raw = json.loads(text)
        raw["targets"] = [Target(**t) for t in raw["targets"]]
        return cls(**raw)


def bench_main(argv: list[str] | None, doc: str, run: Callable[..., Section],
               options: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """The command line every suite module shares.

    A module with options of its own (sizes that override its mode's, say)
    adds them with ``options(parser)``; its ``run`` is then called as
    ``run(mode, plots_dir, args)`` with the parsed arguments.
    """
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller sizes: a few minutes for the whole suite")
    size.add_argument("--smoke", action="store_true", help="tiny sizes: checks that the script works, in seconds")
    ap.add_argument("--no-report", action="store_true", help="do not write the section into a report")
    ap.add_argument("--json", metavar="PATH", help="also write the section, targets and plots as JSON")
    ap.add_argument("--plots", metavar="DIR", help="where to write PNGs (default: plots/ beside the report; a "
                    "temporary folder with --no-report)")
    ap.epilog = ("A full run writes its section into benchmarks/REPORT.md; --smoke and --quick runs write to "
                 "$TMPDIR/bale-bench-MODE/REPORT.md (BALE_BENCH_REPORT overrides both), never to tracked files.")
    if options:
        options(ap)
    args = ap.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    report = report_path(mode)
    check_report_path(report, mode)
    if args.plots and not args.no_report:
        check_report_path(os.path.join(args.plots, "x.png"), mode)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bale-plots-") as scratch:
        # Plots belong to the report: a run that writes no report leaves the report's plots alone.
        plots = args.plots or (scratch if args.no_report else os.path.join(os.path.dirname(report), "plots"))
        os.makedirs(plots, exist_ok=True)
        section = run(mode, plots, args) if options else run(mode, plots)
    print(f"\n## {section.title}\n")
    print("\n".join(section.lines))
    if args.json:
        with open(args.json, "w") as f:
            f.write(section.to_json())
    if not args.no_report:
        write_section(section.title, section.lines, report)
    return 0


# --- plots ---------------------------------------------------------------------------


def line_plot(plots_dir: str, name: str, title: str, xlabel: str, ylabel: str,
              series: dict[str, tuple[Sequence[float], Sequence[float]]], *,
              logx: bool = True, logy: bool = True, base2_x: bool = False) -> str:
    """Draw ``series`` ({label: (xs, ys)}) to ``plots_dir/name.png``; return the file name."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server or in CI
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", markersize=3.5, label=label, linewidth=1.5)
    if logx:
        ax.set_xscale("log", base=2 if base2_x else 10)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.grid(True, which="major", alpha=0.35)
    return _save(fig, ax, plt, plots_dir, name, title, ylabel)


def bar_plot(plots_dir: str, name: str, title: str, ylabel: str, groups: list[str],
             bars: dict[str, Sequence[float]], *, logy: bool = False) -> str:
    """Grouped bars: one group per entry of ``groups``, one bar per key of ``bars``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    width = 0.8 / max(1, len(bars))
    for i, (label, values) in enumerate(bars.items()):
        xs = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width=width, label=label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize="small")
    if logy:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.35)
    return _save(fig, ax, plt, plots_dir, name, title, ylabel)


def _save(fig, ax, plt, plots_dir: str, name: str, title: str, ylabel: str) -> str:
    """Titles, legend and layout of a plot, then ``plots_dir/name.png``; returns the file name."""
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small")
    fig.tight_layout()
    filename = f"{name}.png"
    fig.savefig(os.path.join(plots_dir, filename))
    plt.close(fig)
    return filename


def plot_line(filename: str, caption: str) -> str:
    """The Markdown image line for a plot; REPORT.md sits beside the plots/ folder."""
    return f"![{caption}](plots/{filename})"


def panel_plot(plots_dir: str, name: str, title: str, xlabel: str, ylabel: str,
               panels: dict[str, dict[str, tuple[Sequence[float], Sequence[float]]]], *, base2_x: bool = True) -> str:
    """One log-log panel per entry of ``panels`` ({panel title: {label: (xs, ys)}}), in a grid of two columns."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(11, 3.6 * rows), dpi=100, squeeze=False)
    for ax, (panel, series) in zip(axes.flat, panels.items()):
        for label, (xs, ys) in series.items():
            ax.plot(xs, ys, marker="o", markersize=3, label=label, linewidth=1.3)
        ax.set_xscale("log", base=2 if base2_x else 10)
        ax.set_yscale("log")
        ax.set_title(panel, fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.35)
        ax.legend(fontsize="x-small")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    filename = f"{name}.png"
    fig.savefig(os.path.join(plots_dir, filename))
    plt.close(fig)
    return filename


def builds_in_turns(doc: str, child: str, digits: int = 3) -> None:
    """The command line of a comparison of two builds (``OLD NEW [--rounds N]``,
    directories a build is installed in): each round runs ``child`` (Python code that
    prints a JSON object of figures; its arguments are the build's directory and this
    directory) once per build in a fresh process, builds taking turns, then prints each
    figure's range over the rounds."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    builds = [args.old, args.new]
    here = os.path.dirname(os.path.abspath(__file__))
    figures: dict[str, dict[str, list[float]]] = {b: {} for b in builds}
    for _ in range(args.rounds):
        for b in builds:
            run = subprocess.run([sys.executable, "-c", child, b, here], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"the build in {b} failed:\n{run.stderr}")
            for name, value in json.loads(run.stdout).items():
                figures[b].setdefault(name, []).append(value)
    width = max(len(n) for n in figures[args.old])
    cols = {n: [f"{min(figures[b][n]):.{digits}f}-{max(figures[b][n]):.{digits}f}" for b in builds]
            for n in figures[args.old]}
    col = max(len(c) for pair in cols.values() for c in pair)
    print(f"{'figure':{width}}  {'A':>{col}}  {'B':>{col}}")
    for name, (a, b) in cols.items():
        print(f"{name:{width}}  {a:>{col}}  {b:>{col}}")
    print(f"\nA = {args.old}, B = {args.new}; range over {args.rounds} rounds, builds taking turns.")
