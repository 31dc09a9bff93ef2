"""PlanCache: one entry per exact argument tuple, made once, bounded, and never shared by values
that only compare equal."""
import dataclasses
import threading

import numpy as np
import pytest

import ep
from ep.common.runtime import plan_cache
from ep.common.runtime.plan_cache import PlanCache


@pytest.fixture(autouse=True)
def small_bound(monkeypatch):
    # The plans tier's one bound (caches.py), made small so that a test reaches it.
    monkeypatch.setattr(plan_cache, "MAX_ENTRIES", 4)


def _counting():
    made = []

    def make(*args):
        made.append(args)
        return ("plan", len(made))

    return PlanCache(make), made


def test_a_plan_is_made_once_per_arguments():
    cache, made = _counting()
    first = cache.get((2, 3), "x")
    assert cache.get((2, 3), "x") is first and made == [((2, 3), "x")]


@pytest.mark.parametrize("a, b", [(1, True), (1, 1.0), (1.0, True), (0.0, -0.0), ((2, 3), (2.0, 3)), (1, np.int64(1))])
def test_values_that_compare_equal_get_their_own_plans(a, b):
    cache, made = _counting()
    assert a == b
    assert cache.get(a) != cache.get(b) and len(made) == 2


def test_nans_of_different_payloads_get_their_own_plans():
    cache, made = _counting()
    quiet, payload = np.float64("nan"), np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), np.float64)[0]
    cache.get(float(quiet)), cache.get(float(payload))
    assert len(made) == 2


def test_the_cache_is_bounded_oldest_first():
    cache, made = _counting()
    for i in range(10):
        cache.get(i)
    assert len(cache) == 4
    cache.get(9)  # kept
    cache.get(0)  # dropped long ago: made again
    assert made.count((9,)) == 1 and made.count((0,)) == 2


def test_unhashable_arguments_are_made_every_time():
    cache, made = _counting()
    cache.get([2, 3]), cache.get([2, 3])
    assert len(made) == 2 and len(cache) == 0


def test_threads_share_one_plan():
    cache, _ = _counting()
    found = []
    threads = [threading.Thread(target=lambda: found.append(cache.get("key"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(plan is found[0] for plan in found) and cache.get("key") is found[0]


def test_a_float_size_is_refused_after_the_same_int_size_was_planned(device):
    # The launch plans are keyed exactly: (2.0, 3) never finds the plan (2, 3) made, so it is checked.
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src = ep.testing.to_device(np.ones(3, np.float32), device)
    dst = ep.testing.to_device(np.zeros((2, 3), np.float32), device)
    primitive.Launch(stream, (3,), src, (2, 3), dst)
    with pytest.raises(TypeError, match="dst_dims"):
        primitive.Launch(stream, (3,), src, (2.0, 3), dst)


def test_dataclasses_are_keyed_by_their_fields_exactly():
    @dataclasses.dataclass(frozen=True)
    class Node:
        value: object

    cache, made = _counting()
    assert Node(0.0) == Node(-0.0)
    assert cache.get(Node(0.0)) != cache.get(Node(-0.0)) and cache.get(Node(0.0)) is cache.get(Node(0.0))
    assert len(made) == 2


def test_names_are_found_as_given_and_numbers_still_by_exact_key():
    made = []
    cache = PlanCache(lambda *args: made.append(args) or ("plan", len(made)), by_name=True)
    device = ep.GetDevice("cpu")
    names = ("relu", device, np.dtype(np.float32), None)
    first = cache.get(*names)
    assert cache.get(*names) is first and cache.get("relu", device, np.dtype("float32"), None) is first
    assert cache.get("relu", device, np.dtype(np.float32), 0) != first  # 0 is no name: its own plan
    assert cache.get("relu", device, np.dtype(np.float32), 0.0) != cache.get("relu", device, np.dtype(np.float32), 0)
    assert len(made) == 3 and len(cache) == 3


def test_shapes_as_given_are_found_in_one_lookup_each_made_once():
    made = []
    cache = PlanCache(lambda *args: made.append(args) or ("plan", len(made)), as_given=True)
    first = cache.get((2, 3), None)
    assert cache.get((2, 3), None) is first and cache.get(tuple([2, 3]), None) is first
    assert cache.get((2, 3), (3,)) != first and cache.get((3, 2), None) != first
    assert cache.get([2, 3], None) == ("plan", 4)  # unhashable: made, not kept
    assert len(made) == 4 and len(cache) == 3
    cache.clear()
    assert len(cache) == 0 and cache.get((2, 3), None) == ("plan", 5)


def test_the_last_lookup_is_remembered_only_for_keys_of_immutable_values():
    made = []
    cache = PlanCache(lambda *args: made.append(args) or ("plan", len(made)), remember=2)
    dims = (2, 3)
    entry = cache.get(dims, 1)
    assert cache.last == (dims, 1, entry) and cache.last[0] is dims
    cache.get(dims, 1.0)  # a float's key is built anew: not remembered
    assert cache.last[2] is entry
    cache.get([2, 3], 1)  # a list may change in place: never remembered
    cache.get((2, np.int64(3)), 1)
    assert cache.last[2] is entry
    cache.clear()
    assert all(value is not dims and value is not entry for value in cache.last)


def test_a_launch_finds_its_last_plan_by_identity_and_no_other(device):
    # The declared launch compares its plan arguments with PlanCache.last by identity: an equal
    # float or bool stands for no remembered int, and a new plan is checked and made.
    primitive = ep.NewPrimitive(ep.ReduceFactory, device, "sum", np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src = ep.testing.to_device(np.arange(6, dtype=np.float32), device)
    dst = ep.testing.to_device(np.zeros(2, np.float32), device)
    src_dims, dst_dims = (2, 3), (2, 1)
    primitive.Launch(stream, src_dims, src, dst_dims, dst)
    assert primitive._plans.last[:3] == (src_dims, dst_dims, 1)
    primitive.Launch(stream, src_dims, src, dst_dims, dst, 1)
    np.testing.assert_array_equal(ep.testing.to_numpy(dst), [3, 12])
    with pytest.raises(TypeError, match="correction"):
        primitive.Launch(stream, src_dims, src, dst_dims, dst, True)
    with pytest.raises(TypeError, match="src_dims"):
        primitive.Launch(stream, (2.0, 3), src, dst_dims, dst)
