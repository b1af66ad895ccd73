"""``bale info``: the same counts as before, in memory that is a small
fraction of the region (issue 20, item 6)."""

import io
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

import bale
from bale import cli

HERE = pathlib.Path(__file__).resolve().parents[1]  # tests/
REGIONS = HERE / "info_regions"
EXPECTED = json.loads((REGIONS / "expected.json").read_text())


def test_the_cases_cover_sharing_cycles_tables_records_and_the_golden_vectors():
    names = set(EXPECTED)
    assert {f"info_regions/{n}.bale" for n in ("shared", "cyclic", "appended", "table", "records", "streamed", "mixed")} <= names
    assert len([n for n in names if n.startswith("vectors/")]) == len(list((HERE / "vectors").glob("*.bale")))
    flags = {n: int.from_bytes((HERE / n).read_bytes()[40:44], "little") for n in names}
    assert flags["info_regions/shared.bale"] == 1 and flags["info_regions/appended.bale"] == 1
    assert flags["info_regions/cyclic.bale"] == 3 and flags["info_regions/table.bale"] == 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stats_and_info_output_are_what_the_hash_set_walk_gave(name):
    """expected.json was written by the walk that remembered every object in
    a hash set (tests/info_regions/make.py)."""
    path = HERE / name
    region = bale.open(str(path))
    assert repr(bale._bale.region_stats(region, top=1 << 30)) == EXPECTED[name]["stats"]
    out = io.StringIO()
    cli.info(str(path), False, out)
    lines = [line for line in out.getvalue().splitlines() if not line.startswith("file: ")]
    assert "\n".join(lines) == EXPECTED[name]["info"]


CHILD = textwrap.dedent(
    """
    import hashlib, json, resource, sys
    import bale

    region = bale.open(sys.argv[1])
    # Every page of the file resident first: what is measured next is the walk's own memory.
    hashlib.sha256(memoryview(region)).hexdigest()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stats = bale._bale.region_stats(region, top=5)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"grown_kb": after - before, "nbytes": region.nbytes, "slots": stats["slots"]}))
    """
)


def test_info_walk_needs_memory_that_is_a_small_fraction_of_the_file(tmp_path):
    """A region of many small objects (a tuple, a string and a float per
    item): the walk's peak memory beyond the mapped file stays under an
    eighth of the file, whatever the number of objects."""
    path = tmp_path / "many.bale"
    subprocess.run(
        [sys.executable, "-c", f"import bale; bale.compact([(f'item number {{i}}', i + 0.5) for i in range(600_000)]).save({str(path)!r})"],
        check=True,
        timeout=300,
    )
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True, timeout=300)
    got = json.loads(out.stdout)
    assert got["slots"] == 1 + 3 * 600_000
    assert got["nbytes"] > 30 << 20
    assert got["grown_kb"] * 1024 < got["nbytes"] / 8, got
