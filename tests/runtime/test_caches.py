"""ep.cache_info() lists every cache by tier with the tier's one bound, and ep.cache_clear() empties
them all while primitives already made keep working."""
import numpy as np

import ep
from ep.common.runtime.caches import BOUNDS
from ep.common.runtime.plan_cache import PlanCache
from ep.testing import to_device, to_numpy


def test_cache_info_lists_the_three_tiers_with_their_bounds(device):
    x = to_device(np.arange(-3, 3, dtype=np.float32), device)
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    relu.Launch(ep.GetDevice(device).default_stream, x, to_device(np.empty(6, np.float32), device), 6)
    info = ep.cache_info()
    assert set(info) == {"kernels", "plans", "launch state"}
    for tier, entry in info.items():
        assert entry["bound"] == BOUNDS[tier]
    assert info["kernels"]["entries"] >= 1 and info["plans"]["entries"] >= 1


def test_a_plan_cache_is_counted_and_cleared():
    made = []
    before = ep.cache_info()["plans"]
    cache = PlanCache(lambda n: made.append(n) or n * 2)
    assert cache.get(3) == 6 and cache.get(3) == 6 and made == [3]
    after = ep.cache_info()["plans"]
    assert after["caches"] == before["caches"] + 1 and after["entries"] == before["entries"] + 1
    ep.cache_clear()
    assert len(cache) == 0
    assert cache.get(3) == 6 and made == [3, 3]


def test_primitives_made_before_a_clear_keep_working(device):
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    ep.cache_clear()
    assert ep.cache_info()["plans"]["entries"] == 0
    stream = ep.GetDevice(device).default_stream
    x, y = to_device(np.arange(-3, 3, dtype=np.float32), device), to_device(np.empty(6, np.float32), device)
    relu.Launch(stream, x, y, 6)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(y), np.maximum(np.arange(-3, 3, dtype=np.float32), 0))
    assert np.array_equal(to_numpy(ep.ops.unary("relu", x)), to_numpy(y))
