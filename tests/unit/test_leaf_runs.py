"""The compactor writes a run of scalar leaves of a list, tuple or dict in
one go (`Compactor::leaf_run`), without a trip through the core's encoder
per item. The bytes must be those of the per-item path: the core's JSON
source has no such run, so `compact_json` is the reference, with a
container at every position of the run and runs of every kind of leaf."""

import json

import pytest

import bale

LEAVES = [
    0, -7, 1 << 40, (1 << 62) + 3, -(1 << 63),
    2.5, -0.0, None, True, False,
    "", "short", "a longer string", "caf\xe9", "\u20ac\U0001f600",
]
CONTAINERS = [[], [1, "x"], {}, {"k": 1, "j": [2]}, [[1], {"a": None}]]


def same_bytes(value):
    # Through json.loads, as `compact_json` sees it: equal strings are then
    # distinct objects, which the Python path does not merge either.
    text = json.dumps(value)
    assert bytes(bale.compact(json.loads(text))) == bytes(bale.compact_json(text)), text[:200]


@pytest.mark.parametrize("n", [1, 2, 5, 9, 40])
def test_a_container_at_every_position_of_a_list(n):
    for at in range(n + 1):
        for c in CONTAINERS:
            items = [LEAVES[(at + i) % len(LEAVES)] for i in range(n)]
            items.insert(at, c)
            same_bytes(items)
            same_bytes({"row": items, "tail": 1})


def test_dicts_whose_values_mix_leaves_and_containers():
    rows = []
    for i in range(300):
        d = {f"f{j}": LEAVES[(i + j) % len(LEAVES)] for j in range(i % 9)}
        if i % 3 == 0:
            d["nested"] = CONTAINERS[i % len(CONTAINERS)]
        if i % 4 == 1:
            d = {"first": [i], **d}
        rows.append(d)
    same_bytes(rows)
    # Ragged keys: dicts of key ids, read by the same run.
    same_bytes([{f"k{(i * 7 + j) % 30}": LEAVES[j % len(LEAVES)] for j in range(3 + i % 5)} for i in range(300)])


def test_tuples_and_big_ints_beyond_json():
    # Not JSON: checked against the same value thawed and compacted again.
    value = [(1 << 100, "x", None, 2.5, [1 << 70]), ((-1) << 90, (1, 2), "y" * 30)] * 50
    region = bale.compact(value)
    assert bale.thaw(region) == value
    assert bytes(bale.compact(bale.thaw(region))) == bytes(region)


def test_shared_leaves_in_share_mode_keep_their_identity_rules():
    # With share=True every element goes through visit: a list met twice
    # is written once, whatever leaves surround it.
    inner = [1, "s" * 20]
    value = ["a" * 12, inner, 3.5, inner, None]
    got = bale.thaw(bale.compact(value, share=True))
    assert got == value and got[1] is got[3]
