"""Pickling and copying of regions and views (protocol 5 buffers)."""

import copy
import pickle

import pytest

import bale

DATA = {"users": [{"id": i, "name": f"user{i}", "tags": ("a", "b")} for i in range(1000)], "meta": {1, 2}}


def test_protocol_5_ships_one_out_of_band_buffer_without_copy():
    region = bale.compact(DATA)
    buffers = []
    payload = pickle.dumps(region, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1
    raw = buffers[0].raw()
    assert raw.nbytes == region.nbytes
    # The buffer is the region's own memory, not a copy of it.
    assert raw.obj is region
    assert len(payload) < 300
    again = pickle.loads(payload, buffers=buffers)
    assert isinstance(again, bale.Region)
    assert bytes(again) == bytes(region)
    assert again.root == DATA


def test_protocol_5_in_band_without_callback():
    region = bale.compact(DATA)
    again = pickle.loads(pickle.dumps(region, protocol=5))
    assert again.root == DATA


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_older_protocols_fall_back_to_in_band_bytes(protocol):
    region = bale.compact(DATA)
    payload = pickle.dumps(region, protocol=protocol)
    assert len(payload) >= region.nbytes
    assert pickle.loads(payload).root == DATA


def test_pickled_view_ships_only_its_value_and_keeps_its_kind():
    region = bale.compact(DATA)
    record = region.root["users"][500]
    payload = pickle.dumps(record, protocol=5)
    assert len(payload) < region.nbytes // 20
    back = pickle.loads(payload)
    assert isinstance(back, bale.DictView)
    assert back == {"id": 500, "name": "user500", "tags": ("a", "b")}
    for view, kind in [
        (region.root["users"], bale.ListView),
        (region.root["users"][0]["tags"], bale.TupleView),
        (region.root["meta"], bale.SetView),
        (bale.compact(frozenset({1, 2})).root, bale.FrozenSetView),
    ]:
        back = pickle.loads(pickle.dumps(view, protocol=5))
        assert isinstance(back, kind)
        assert back == view


def test_copy_and_deepcopy_are_cheap_and_correct():
    region = bale.compact(DATA)
    assert copy.copy(region) is region
    assert copy.deepcopy(region) is region
    assert copy.deepcopy({"r": region})["r"] is region
