"""Dict shapes: one SHAPE per distinct key sequence a compaction meets
(the shape cache, keyed by the key objects; up to 32 sequences, then ID
dicts, see test_id_dicts.py), and dict items read in their order whichever
way they are read (the entry table, or `PyDict_Next`)."""

import collections
import random

import bale
from bale import _bale


def shapes_of(region):
    return _bale.region_stats(region)["distinct_shapes"]


def test_each_distinct_key_sequence_is_one_shape_even_when_met_again_later():
    # Up to 32 key sequences get a SHAPE each (past that, dicts with a new
    # sequence name their keys by ids: test_id_dicts.py).
    rng = random.Random(5)
    keys = [f"field_{k}" for k in range(30)]
    sequences = []
    while len(sequences) < 26:
        seq = tuple(rng.sample(keys, rng.randrange(3, 9)))
        if seq not in sequences:
            sequences.append(seq)
    dicts = [{k: i for k in sequences[i % 26]} for i in range(5000)]
    # The first ones again, far from where they were first met, and the
    # same keys in another order (a sequence of its own).
    again = [dict(d) for d in dicts[:200]]
    reordered = [dict(reversed(list(d.items()))) for d in dicts[:6]]
    data = dicts + again + reordered
    region = bale.compact(data)
    expected = {tuple(d) for d in data}
    assert len(expected) == 32
    assert shapes_of(region) == len(expected)
    assert "dicts (key ids)" not in _bale.region_stats(region)["kinds"]
    assert bale.thaw(region.root) == data
    assert [list(d) for d in bale.thaw(region.root)] == [list(d) for d in data]


def test_dicts_whose_entry_table_has_holes_keep_their_order():
    d = {f"k{i}": i for i in range(20)}
    for i in range(0, 20, 3):
        del d[f"k{i}"]
    d["k0"] = "back, last"
    region = bale.compact([d, dict(d)])
    thawed = bale.thaw(region.root)
    assert list(thawed[0].items()) == list(d.items())
    assert list(region.root[0].keys()) == list(d)


def test_dicts_of_other_keys_and_of_collections_classes_are_read_in_order():
    values = [
        {1: "a", 2.5: "b", ("t", 1): "c", None: "d"},
        collections.defaultdict(list, z=[1], a=[2]),
        collections.Counter("abracadabra"),
        {"é": 1, "字": 2, "🙂": 3, "x": 4},
    ]
    region = bale.compact(values)
    thawed = bale.thaw(region.root)
    for got, want in zip(thawed, values):
        assert list(got.items()) == list(want.items())


def test_a_shape_key_pointing_past_its_shape_is_refused_by_thaw_from_the_memo_path_too():
    # The key string is made once (as a value first), so the shape's key
    # slot is answered from the memo path, which must check its place too.
    import struct

    region = bale.compact(["a key longer than 7", {"a key longer than 7": 1}])
    raw = bytearray(bytes(region))
    shape_at = next(at for at in range(64, len(raw), 8) if raw[at] == 0x0F and raw[at + 1 : at + 8] == bytes([1, 0, 0, 0, 0, 0, 0]))
    (slot,) = struct.unpack_from("<Q", raw, shape_at + 8)
    assert slot & 7 == 4, hex(slot)  # a STR slot (FORMAT.md, *Slots*)
    # The same string, said to lie at the shape itself: not before it.
    moved = (slot & ((1 << 21) - 1)) | ((shape_at >> 3) << 21)
    struct.pack_into("<Q", raw, shape_at + 8, moved)
    struct.pack_into("<Q", raw, 32, 0)
    struct.pack_into("<Q", raw, 32, _bale._xxh3(bytes(raw)))
    bad = bale.load(bytes(raw))
    try:
        bale.thaw(bad.root)
    except bale.FormatError as err:
        assert "string" in str(err) or "shape" in str(err), err
    else:
        raise AssertionError("a key string placed at its shape was accepted")
