"""thaw makes a string stored once into one object, however many slots
reference it (as pickle's memo does), and never confuses two strings."""

import random
import struct

import pytest

import bale


def test_a_vocabulary_thaws_into_one_object_per_word():
    rng = random.Random(1)
    vocab = [f"word{i:03d}-" + "x" * rng.randrange(8, 50) for i in range(10)] + ["é" * 9, "€" * 9, "\U0001f600" * 9]
    data = [rng.choice(vocab) for _ in range(20_000)]
    native = bale.thaw(bale.compact(data).root)
    assert native == data
    assert len({id(s) for s in native}) == len(set(data))


def test_a_vocabulary_of_thousands_still_thaws_into_one_object_per_word():
    # The memo grows with the strings it holds: none is made twice.
    rng = random.Random(2)
    vocab = [f"w{i:05d}-" + "y" * rng.randrange(2, 40) for i in range(3_000)]
    data = [rng.choice(vocab) for _ in range(60_000)]
    native = bale.thaw(bale.compact(data).root)
    assert native == data
    assert len({id(s) for s in native}) == len(set(data))


def test_a_memo_that_turned_itself_off_still_thaws_every_string():
    # 30,000 distinct strings saturate the memo and turn it off; the
    # vocabulary after them is made string by string, and still right.
    vocab = [f"v{i}-" + "z" * (i % 30) for i in range(50)]
    data = [f"d{i}-{'q' * (i % 40)}" for i in range(30_000)] + vocab * 200 + [f"d{i}-{'q' * (i % 40)}" for i in range(5)]
    assert bale.thaw(bale.compact(data).root) == data


def test_strings_of_a_column_that_share_a_start_stay_apart():
    # A STR_COLUMN's empty string starts where the next one does: same
    # address, other length.
    rows = [{"name": n, "tag": t} for n, t in zip(["", "abc", "", "abcdef", "ab", ""] * 50, ["x", "", "yy", "", "zzz", "w"] * 50)]
    native = bale.thaw(bale.compact(rows).root)
    assert native == rows
    assert bale.thaw(bale.compact({"rows": rows, "again": rows[:7]}).root) == {"rows": rows, "again": rows[:7]}


def test_more_distinct_strings_than_the_memo_holds():
    data = [f"s{i}-{'q' * (i % 40)}" for i in range(50_000)] * 2
    assert bale.thaw(bale.compact(data).root) == data


def test_dict_values_and_tuples_that_repeat_a_string_share_it():
    word = "a repeated value, longer than seven"
    data = {"d": {f"k{i}": word for i in range(100)}, "t": tuple([word] * 50), "mixed": [{"x": word}, {"y": word, "z": 1}]}
    native = bale.thaw(bale.compact(data).root)
    assert native == data
    values = list(native["d"].values()) + list(native["t"]) + [native["mixed"][0]["x"], native["mixed"][1]["y"]]
    assert len({id(v) for v in values}) == 1


def test_a_string_met_again_from_a_place_it_may_not_be_referenced_from_is_refused():
    """A repeated string is taken from the memo only after its slot's place
    is checked: a slot pointing past its own list (a forward reference,
    which no writer makes) stays a FormatError even when the same string
    was thawed before from a list allowed to reference it."""
    s1, s2 = "alpha-string-1", "omega-string-2"
    good = bytes(bale.compact([[s1], [s2]]))  # s1, [s1], s2, [s2], root
    words = [struct.unpack_from("<Q", good, at)[0] for at in range(0, len(good) - 7, 8)]
    str_slots = {}  # the place of each STR slot, by the string it names
    for i, w in enumerate(words):
        if w & 0x7 == 4 and w >> 21 << 3 < len(good):
            str_slots[good[w >> 21 << 3 :][: (w >> 5) & 0xFFFF].decode()] = (8 * i, w)
    (s1_at, _), (s2_at, s2_slot) = str_slots[s1], str_slots[s2]
    assert s2_slot >> 21 << 3 > s1_at  # s2's units lie after [s1]
    list_slots = [8 * i for i, w in enumerate(words) if w & 0x7 == 5 and i >= 8]  # the root's items (not the header's root slot)
    assert len(list_slots) == 2
    bad = bytearray(good)
    struct.pack_into("<Q", bad, s1_at, s2_slot)  # [s1] now names s2, which lies after it
    a, b = list_slots  # root: [[s2], [forward s2]], so the valid s2 is thawed first
    bad[a : a + 8], bad[b : b + 8] = good[b : b + 8], good[a : a + 8]
    region = bale.load(bytes(bad))
    with pytest.raises(bale.FormatError, match="string"):
        bale.thaw(region.root)
    with pytest.raises(bale.FormatError):
        region.verify()


def test_dicts_of_many_shapes_share_their_key_objects():
    rng = random.Random(3)
    names = ["id", "a", "kind", "field_number_one", "field_number_two", "é_key_latin1", "ключ", "\U0001f600key"]
    rows = [{k: i for k in rng.sample(names, rng.randrange(1, len(names) + 1))} for i in range(2_000)]
    native = bale.thaw(bale.compact(rows).root)
    assert native == rows
    assert [list(d) for d in native] == [list(d) for d in rows]  # key order kept
    key_ids = {}
    for d in native:
        for k in d:
            key_ids.setdefault(k, set()).add(id(k))
    assert set(key_ids) == set(names)
    assert all(len(ids) == 1 for ids in key_ids.values()), {k: len(v) for k, v in key_ids.items()}


def test_one_character_ascii_strings_are_cpythons_shared_objects():
    single = chr(120)  # CPython's one object for "x"
    region = bale.compact(["x", "", "xy", "x"])
    out = bale.thaw(region)
    assert out == ["x", "", "xy", "x"]
    assert out[0] is single and out[3] is single
    assert region.root[0] is single
    # A damaged inline string is refused, not made (`inline_scalar` leaves it to `decode`).
    import struct

    raw = bytearray(bytes(region))
    (root,) = struct.unpack_from("<Q", raw, 24)
    pos = (root >> 19) << 3
    raw[pos + 1] = 0xC3  # the "x" slot's character, now not ASCII
    struct.pack_into("<Q", raw, 32, 0)
    struct.pack_into("<Q", raw, 32, bale._bale._xxh3(bytes(raw)))
    with pytest.raises(bale.FormatError, match="not ASCII"):
        bale.thaw(bale.load(bytes(raw)))


def test_the_memo_table_kept_between_thaws_holds_nothing_of_an_earlier_one():
    # The memo's table outlives its thaw, emptied (`Note [The memo table
    # kept between thaws]`). Each round's region is dropped before the next
    # is made: the next takes the same buffer (`spare_buffer.rs`), so its
    # strings sit where the last round's did, with the same lengths; an
    # entry left over would hand back the last round's string.
    for round_ in range(30):
        words = [f"r{round_:02d} word {i:04d} " + "z" * (i % 40) for i in range(400)]
        data = [words[i % 400] for i in range(3_000)] + [{"k": words[i]} for i in range(0, 400, 9)]
        region = bale.compact(data)
        native = bale.thaw(region.root)
        assert native == data
        assert len({id(s) for s in native[:3_000]}) == 400
        # A small thaw after it starts with the same table.
        tiny = bale.compact([words[0], words[1], words[0]])
        got = bale.thaw(tiny.root)
        assert got == [words[0], words[1], words[0]] and got[0] is got[2]
        del region, native, tiny, got
