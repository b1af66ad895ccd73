"""Which of bale's readings of CPython internals are on, per interpreter.

Runs `bale._bale._layout_checks()` in each `.venv-X` that `make test-py
PY_VERSION=X` made (bale installed from the wheel built for that
interpreter) and prints one row per version. Interpreters that live in a
chroot (see .ci/pythons.sh) are run through it.

    python benchmarks/layout_by_version.py [VERSION ...]   (make layout-by-version)
"""

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_VERSIONS = ["3.10", "3.11", "3.12", "3.13", "3.14", "3.14t"]
PROBE = (
    "import json, sys, sysconfig, bale; "
    "print(json.dumps({'python': sys.version.split()[0], "
    "'free_threaded': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
    "'gil_enabled': getattr(sys, '_is_gil_enabled', lambda: True)(), "
    "'checks': bale._bale._layout_checks()}))"
)
COLUMNS = ["ints", "dict_entries", "type_reads", "views"]


def probe(version):
    venv_python = REPO / f".venv-{version}" / "bin" / "python"
    # A chroot's venv links to an interpreter path that exists only inside.
    if not (REPO / f".venv-{version}" / "pyvenv.cfg").exists():
        return None, f"no .venv-{version} (run make test-py PY_VERSION={version})"
    command = [str(venv_python.relative_to(REPO)), "-W", "ignore", "-c", PROBE]
    chroot = REPO / ".pythons" / version / "bin" / "in-chroot"
    if chroot.exists():
        command = [str(chroot)] + command
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    return json.loads(done.stdout), None


def main(argv):
    versions = argv or DEFAULT_VERSIONS
    header = ["version", "CPython", "free-threaded", "GIL after import"] + COLUMNS
    rows = []
    for version in versions:
        result, problem = probe(version)
        if result is None:
            rows.append([version, problem] + [""] * (len(header) - 2))
            continue
        checks = result["checks"]
        rows.append(
            [version, result["python"], "yes" if result["free_threaded"] else "no",
             "on" if result["gil_enabled"] else "off"]
            + ["on" if checks[c] else "off" for c in COLUMNS]
        )
        if checks["fast_paths_switched_off"]:
            rows[-1][1] += " (BALE_NO_FAST_PATHS)"
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
