"""ID_DICT (FORMAT.md, *Dicts of key ids*): past 32 key sequences, a dict of
1 to 15 str keys with a sequence not met before names its keys by one-byte
ids into a key table shared by all such dicts. Every way of reading a dict
reads it; damaged ids are refused; every writer writes the same bytes."""

import collections
import json
import struct

import pytest

import bale
from bale import _bale

KIND_ID_DICT = 0x23
FIRST_SHAPES = 32


def kinds(region):
    return _bale.region_stats(region)["kinds"]


def hetero(n, seed=3, nkeys=30, lo=3, hi=8):
    """`n` dicts of `lo`..`hi` of `nkeys` keys in random order, mixed values."""
    import random

    rng = random.Random(seed)
    keys = [f"field_{k}" for k in range(nkeys)]
    values = [1, -7, 2.5, None, True, "x", "a longer string value", [1, 2], {"in": 1}]
    return [{k: rng.choice(values) for k in rng.sample(keys, rng.randint(lo, hi))} for _ in range(n)]


def item_slots(raw):
    """The slots of the root list's items (FORMAT.md, *Slots*: a LIST slot)."""
    (root,) = struct.unpack_from("<Q", raw, 24)
    assert root & 7 == 5, "root is a LIST slot"
    n, pos = (root >> 3) & 0xFFFF, (root >> 19) << 3
    return [struct.unpack_from("<Q", raw, pos + 8 * i)[0] for i in range(n)]


def id_dict_offsets(raw):
    """Offsets of the ID_DICT objects that are items of the root list."""
    return [s for s in item_slots(raw) if s & 7 == 0 and raw[s] == KIND_ID_DICT]


def resum(raw):
    struct.pack_into("<Q", raw, 32, 0)
    struct.pack_into("<Q", raw, 32, _bale._xxh3(bytes(raw)))
    return bytes(raw)


def test_dicts_past_the_first_shapes_name_their_keys_by_ids_and_thaw_in_order():
    data = hetero(3000)
    region = bale.compact(data)
    k = kinds(region)
    assert k["dicts (key ids)"][0] > 2900
    # The first 32 sequences' shapes, and the key table written again as keys were added.
    assert FIRST_SHAPES < _bale.region_stats(region)["distinct_shapes"] <= FIRST_SHAPES + 30
    region.verify()
    thawed = bale.thaw(region)
    assert thawed == data
    assert [list(d.items()) for d in thawed] == [list(d.items()) for d in data]


def test_views_of_id_dicts_read_like_the_dicts():
    data = hetero(400)
    region = bale.compact(data)
    assert id_dict_offsets(bytes(region))
    root = region.root
    for view, d in zip(root, data):
        assert len(view) == len(d)
        assert list(view) == list(d)
        assert list(view.keys()) == list(d.keys())
        assert [bale.thaw(v) if hasattr(v, "__len__") and not isinstance(v, str) else v for v in view.values()] == [
            v for v in d.values()
        ]
        assert [k for k, _ in view.items()] == list(d)
        assert view == d
        for k in d:
            assert k in view
            assert bale.thaw(view[k]) == d[k] if isinstance(d[k], (list, dict)) else view[k] == d[k]
        # A key of the table that this dict lacks, and one nowhere.
        absent = next(f"field_{i}" for i in range(30) if f"field_{i}" not in d)
        assert absent not in view
        assert view.get(absent, "none") == "none"
        with pytest.raises(KeyError):
            view["nowhere"]
        assert repr(view) == repr(d)


def test_column_json_and_paths_read_id_dicts():
    data = hetero(300, lo=3, hi=6)
    region = bale.compact(data)
    got = bale.column(region.root, "field_3") if all("field_3" in d for d in data) else None
    assert got is None or list(got) == [d["field_3"] for d in data]
    full = [{**d, "id": i} for i, d in enumerate(data)]
    region = bale.compact(full)
    assert "dicts (key ids)" in kinds(region)
    col = bale.column(region.root, "id")
    assert list(col) == list(range(len(full)))
    assert json.loads(bale.to_json(region)) == json.loads(json.dumps(full))


def test_compact_json_writes_the_bytes_of_compact_json_loads():
    for seed in range(4):
        text = json.dumps(hetero(2000, seed=seed))
        assert bytes(bale.compact_json(text)) == bytes(bale.compact(json.loads(text)))
    # Non-ASCII keys, keys longer than a slot, and a full key table.
    wide = [{f"ключ_{(i * 7 + j) % 300}_{'x' * (j % 9)}": j for j in range(i % 5 + 1)} for i in range(3000)]
    text = json.dumps(wide, ensure_ascii=False)
    assert bytes(bale.compact_json(text)) == bytes(bale.compact(json.loads(text)))
    assert bale.thaw(bale.compact_json(text)) == wide


def test_copies_keep_id_dicts_and_their_values():
    data = hetero(1000)
    region = bale.compact(data)
    copy = region.compacted()
    assert kinds(copy)["dicts (key ids)"] == kinds(region)["dicts (key ids)"]
    assert bale.thaw(copy) == data
    # Views inside new values are copied from the region.
    mixed = bale.compact({"some": region.root[500:700], "one": region.root[999]})
    assert bale.thaw(mixed) == {"some": data[500:700], "one": data[999]}
    mixed.verify()


def test_other_dicts_keep_shapes():
    # Non-str keys, more than 15 keys, and dicts of collections classes.
    many = [{i: j for i in range(j % 4 + 1)} for j in range(200)] + [{f"k{i}_{j}": i for i in range(16)} for j in range(60)]
    region = bale.compact(hetero(100) + many)
    assert kinds(region)["dicts (key ids)"][0] < 100
    assert bale.thaw(region)[100:] == many
    classes = [collections.OrderedDict((f"k{(i + j) % 40}", j) for j in range(i % 5 + 1)) for i in range(300)]
    region = bale.compact(hetero(100) + classes)
    assert list(bale.thaw(region)[100:]) == classes
    assert all(type(d) is collections.OrderedDict for d in bale.thaw(region)[100:])


def test_more_keys_than_a_table_holds_fall_back_to_shapes():
    data = [{f"a{i}": i, f"b{i}": -i} for i in range(400)]
    region = bale.compact(data)
    k = kinds(region)
    # 256 keys fit the table: 128 dicts after the first 32 shapes.
    assert k["dicts (key ids)"][0] == 128
    assert bale.thaw(region) == data
    region.verify()
    text = json.dumps(data)
    assert bytes(bale.compact_json(text)) == bytes(region)


def test_a_dict_that_holds_itself_is_an_id_dict_in_a_cyclic_region():
    data = hetero(100)
    loop = {"field_1": 1, "self": None}
    loop["self"] = loop
    region = bale.compact(data + [loop], share=True)
    raw = bytes(region)
    assert raw[item_slots(raw)[-1]] == KIND_ID_DICT
    out = bale.thaw(region)
    assert out[-1]["self"] is out[-1]
    assert out[:-1] == data
    assert region.root[-1]["self"]["self"]["field_1"] == 1


@pytest.fixture
def damaged():
    """A region of ID_DICTs and the offset of one of them."""
    data = [{f"k{(i * 5 + j) % 30}": j for j in range(3)} for i in range(300)]
    region = bale.compact(data)
    raw = bytearray(bytes(region))
    at = id_dict_offsets(raw)[-1]
    assert raw[at + 8] == 3
    return data, raw, at


def test_an_id_beyond_the_key_table_is_refused_on_read(damaged):
    _, raw, at = damaged
    raw[at + 9] = 200
    bad = bale.load(resum(raw))
    with pytest.raises(bale.FormatError, match="beyond its key table"):
        bale.thaw(bad)
    with pytest.raises(bale.FormatError, match="beyond its key table"):
        bad.root[-1]
    with pytest.raises(bale.FormatError, match="beyond its key table"):
        bale.load(resum(raw), verify=True)


def test_a_key_id_twice_is_refused_by_verify_and_by_copies(damaged):
    _, raw, at = damaged
    raw[at + 10] = raw[at + 9]
    with pytest.raises(bale.FormatError, match="one key id twice"):
        bale.load(resum(raw), verify=True)
    bad = bale.load(resum(raw))
    with pytest.raises(bale.FormatError, match="one key id twice"):
        bad.compacted()
    # Unverified, the views read what is there; the dict thaws with one key fewer.
    assert len(bale.thaw(bad)[-1]) == 2


def test_nonzero_padding_and_a_count_past_the_region_are_refused(damaged):
    _, raw, at = damaged
    pad = bytearray(raw)
    pad[at + 15] = 1
    with pytest.raises(bale.FormatError, match="padding"):
        bale.load(resum(pad), verify=True)
    count = bytearray(raw)
    count[at + 8] = 255
    with pytest.raises(bale.FormatError):
        bale.thaw(bale.load(resum(count)))
    with pytest.raises(bale.FormatError):
        bale.load(resum(count), verify=True)


def test_the_key_table_must_be_a_shape_before_the_dict(damaged):
    _, raw, at = damaged
    (head,) = struct.unpack_from("<Q", raw, at)
    for table in (at, 8, at + 8):
        bent = bytearray(raw)
        struct.pack_into("<Q", bent, at, (head & 0xFF) | ((table >> 3) << 8))
        with pytest.raises(bale.FormatError):
            bale.thaw(bale.load(resum(bent)))


class _Clearer:
    """A record whose `get=` empties the dicts compacted before it (freeing
    their key strings) and returns dicts of new key strings, which may be
    given the freed addresses."""


def test_keys_known_by_address_stay_right_when_a_callback_frees_them():
    # 31 + 160 keys, 50 more to come: the key table (256 at most) takes them all.
    victims = [{"".join(["v", str(i)]): i, "".join(["u", str(i)]): -i} for i in range(80)]
    before = json.loads(json.dumps(victims))  # other key objects: the victims hold the only ones

    def fresh():
        return [{"".join(["w", str(i)]): i, "".join(["x", str(i)]): -i} for i in range(25)]

    def get(obj):
        for v in victims:
            v.clear()
        return (fresh(),)

    bale.register(_Clearer, ["d"], get=get, make=lambda d: d)
    region = bale.compact(hetero(50) + victims + [_Clearer()])
    assert "dicts (key ids)" in kinds(region)
    got = bale.thaw(region)
    # The fresh dicts are ID_DICTs too: their keys went through the table.
    without = kinds(bale.compact(hetero(50) + before))["dicts (key ids)"][0]
    assert kinds(region)["dicts (key ids)"][0] == without + 25
    assert got[50:130] == before
    assert got[130] == fresh()
    region.verify()
