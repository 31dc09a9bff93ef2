"""ep.ops.pad: torch.nn.functional.pad's constant mode, then the ConstantPad primitive."""
from __future__ import annotations

from typing import Sequence

from ep.common.primitive.constant_pad import simplify_padding
from ep.common.primitive.operands import contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import scalar_value
from ep.common.runtime.validate import MAX_NUM_DIMS, check_sequence, int64
from ep.include.primitive.constant_pad import ConstantPadFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind


def pad_widths(shape: Sequence[int], pad: object) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """torch's pad rule: (padding before each dim, padding after each dim, the result's shape).

    pad holds pairs (before, after) from the last dim backwards, at most one pair per dim; dims it
    does not reach are not padded; a negative entry crops. ValueError naming pad when its length is
    odd or above 2 * len(shape), or when its crops (negative entries) leave a dim below zero, before any padding.
    """
    check_sequence(pad, "pad", "ints")
    values = tuple(int64(p, f"pad[{i}]") for i, p in enumerate(pad))
    ndim = len(shape)
    if len(values) % 2:
        raise ValueError(f"pad: has {len(values)} entries; expected an even number (a (before, after) pair per dim)")
    if len(values) > 2 * ndim:
        raise ValueError(f"pad: has {len(values)} entries, more than 2 * {ndim} for an array of {ndim} dims")
    before, after = [0] * ndim, [0] * ndim
    for pair in range(len(values) // 2):
        dim = ndim - 1 - pair
        before[dim], after[dim] = values[2 * pair], values[2 * pair + 1]
    for dim, (n, b, a) in enumerate(zip(shape, before, after)):
        # torch crops first, then pads: the crops alone must leave the dim a size >= 0.
        cropped = n + min(b, 0) + min(a, 0)
        if cropped < 0:
            pair = ndim - 1 - dim
            raise ValueError(
                f"pad: pad[{2 * pair}], pad[{2 * pair + 1}] = {b}, {a} crop dim {dim} of size {n} to {cropped};"
                " expected a size >= 0"
            )
    return tuple(before), tuple(after), tuple(n + b + a for n, b, a in zip(shape, before, after))


@same_kind("x")
def pad(x, pad: Sequence[int], value=None, *, out=None, stream=None):
    """x padded with value (torch.nn.functional.pad, mode="constant"): pad holds (before, after)
    pairs from the last dim backwards, (left, right, top, bottom, ...), at most one per dim; a
    negative entry crops that many elements instead. value (None: 0, as torch's) is converted to
    x's dtype (a float to an integer dtype truncated toward zero). The result is a new C-contiguous
    array (or out). A global x (ep.to_global) gives a global tensor, laid out by sbp when given.
    """
    device = device_of(x, "x")
    dtype = as_data_type(x.dtype, "x")
    x_shape = tuple(x.shape)
    shape, stages = _PLANS.get(x_shape, pad)
    value = scalar_value(0 if value is None else value, "value", dtype)
    primitive = NewPrimitive(ConstantPadFactory, device, dtype)
    stream = stream_for(device, stream)
    x = contiguous(x, device, stream)
    out = output(out, shape, dtype, device, stream, "pad")
    x = unaliased(x, out, device, stream)
    if not x_shape:
        # A 0-d array: pad is empty; its one element moves as shape (1,).
        primitive.launch_trusted(stream, 1, (1,), x, (0,), (0,), value, out)
        return out
    for i, (stage_before, stage_after, grown) in enumerate(stages):
        dst = out if i == len(stages) - 1 else empty(grown, dtype, device, stream)
        primitive.launch_trusted(stream, len(x_shape), x_shape, x, stage_before, stage_after, value, dst)
        x, x_shape = dst, grown
    return out


def _plan(x_shape: tuple[int, ...], pad: object) -> tuple:
    """(the result's shape, the stages: each one's padding before and after and the shape it
    gives) of x_shape padded by pad."""
    before, after, shape = pad_widths(x_shape, pad)
    stages = []
    for stage_before, stage_after in _stages(x_shape, before, after):
        x_shape = tuple(n + b + a for n, b, a in zip(x_shape, stage_before, stage_after))
        stages.append((stage_before, stage_after, x_shape))
    return shape, tuple(stages)


# Keyed by x's shape and pad as given (a list is planned on every call): 6 of an 11 us overhead
# on a (508, 508) pad was planning it.
_PLANS = PlanCache(_plan)


def _stages(shape: tuple[int, ...], before: tuple[int, ...], after: tuple[int, ...]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The paddings of the pads that make this one, innermost dims first: one pad, or past the
    primitive's MAX_NUM_DIMS dims after merging (torch pads any rank) as many as keep within it."""
    stages, start = [], len(shape)
    while start > 0:
        # The most outer dims this stage can take on top of those inside it.
        end, start = start, start - 1
        while start > 0 and len(simplify_padding(shape, *_only(before, after, start - 1, end))[0]) <= MAX_NUM_DIMS:
            start -= 1
        stages.append(_only(before, after, start, end))
    return stages


def _only(before: tuple[int, ...], after: tuple[int, ...], start: int, end: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """before and after with every dim outside [start, end) unpadded."""
    keep = range(start, end)
    return tuple(b if d in keep else 0 for d, b in enumerate(before)), tuple(a if d in keep else 0 for d, a in enumerate(after))
