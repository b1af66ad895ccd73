"""The README is a tutorial that runs: its ```python blocks, taken in order,
run as one program (issue 20, item 10).

Every block runs, in one namespace, in a fresh interpreter whose working
directory is a temporary one (the blocks write files such as
``records.bale``). A block preceded by the line ``<!-- not run -->`` is
skipped; none is today, and any that is must say why in the text.
Tracebacks name README.md, with its line numbers and lines.
"""

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NOT_RUN = "<!-- not run -->"

FENCE = re.compile(r"^```(\S*)[ \t]*$")


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """``(first line number, code, runnable)`` of each ```python block."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if lang == "python":
            before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n", before != NOT_RUN))
        i = end + 1
    return blocks


RUNNER = """
import json, sys
readme, blocks = sys.argv[1], json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for line, code in blocks:
    print(f"README.md line {line}", flush=True)
    # Blank lines first, so that tracebacks give README.md's own line numbers.
    exec(compile("\\n" * (line - 1) + code, readme, "exec"), namespace)
print("all blocks ran", flush=True)
"""


def test_the_readme_has_python_blocks_and_the_marker_is_rare():
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    assert sum(not runnable for _, _, runnable in blocks) <= 1


def test_python_blocks_find_fences_and_the_not_run_marker():
    text = "a\n```python\nx = 1\n```\n\n<!-- not run -->\n\n```python\nboom()\n```\n```sh\nls\n```\n```python\ny = x\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n", True), (9, "boom()\n", False), (15, "y = x\n", True)]


def test_readme_python_blocks_run_in_order_as_one_program(tmp_path):
    blocks = [(line, code) for line, code, runnable in python_blocks(README.read_text(encoding="utf-8")) if runnable]
    p = subprocess.run(
        [sys.executable, "-c", RUNNER, str(README)],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert p.returncode == 0, f"{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
    assert p.stdout.splitlines()[-1] == "all blocks ran"
