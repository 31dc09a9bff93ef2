"""ExpandGrad on the CPU: parallel over dst elements, each summing its strided set of src."""
from __future__ import annotations

import functools

import numpy as np
from numba import prange

from ep.common.math.convert import load_fn
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, prepare_expand_grad, store_sum_fn
from ep.common.jit import scalar_function, specialize
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.runtime.stream import check_stream
from ep.cpu.kernel import CpuKernel
from ep.include.primitive.expand_grad import ExpandGrad, ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


# dst elements per task along a kept innermost dim.
BLOCK = 512


def _sum_view(view, n):
    # Four running sums: one would wait on each add's latency, as LLVM keeps float adds in order.
    t0 = t1 = t2 = t3 = accumulate(0)  # noqa: F821 (bound by specialize)
    quads = n // 4 * 4
    for j in range(0, quads, 4):
        t0 += load(view[j])  # noqa: F821
        t1 += load(view[j + 1])  # noqa: F821
        t2 += load(view[j + 2])  # noqa: F821
        t3 += load(view[j + 3])  # noqa: F821
    for j in range(quads, n):
        t0 += load(view[j])  # noqa: F821
    return (t0 + t1) + (t2 + t3)


def _expand_grad(
    src, dst, sums, num_tasks, pieces, row, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride
):
    # A task is a block of dst elements along dst's innermost dim. When that dim is kept, the block
    # is contiguous in src too, and adding whole src rows into `sums` (host-allocated accumulators)
    # reads src in order; otherwise the block is one element summing runs of its innermost summed dim.
    # Loops index slices, whose indices Numba knows are not negative, so that LLVM vectorizes them.
    for task in prange(num_tasks):
        r = task // pieces
        b0 = (task - r * pieces) * BLOCK
        first = r * row + b0
        n = min(BLOCK, row - b0)
        base = map_offset(first, dst_strides, src_strides)
        if n == 1:
            total = accumulate(0)  # noqa: F821
            for k in range(num_outer):
                offset = base + map_offset(k, outer_strides, outer_src_strides)
                if inner_stride <= 1:  # 0 when nothing is summed: one element
                    total += sum_view(src[offset : offset + inner], inner)  # noqa: F821
                else:
                    end = offset + (inner - 1) * inner_stride + 1
                    total += sum_view(src[offset:end:inner_stride], inner)  # noqa: F821
            dst[first] = store(total)  # noqa: F821
        else:
            acc = sums[first : first + n]
            for b in range(n):
                acc[b] = 0
            for k in range(num_outer):
                offset = base + map_offset(k, outer_strides, outer_src_strides)
                for j in range(inner):
                    src_row = src[offset + j * inner_stride : offset + j * inner_stride + n]
                    for b in range(n):
                        acc[b] += load(src_row[b])  # noqa: F821
            out = dst[first : first + n]
            for b in range(n):
                out[b] = store(acc[b])  # noqa: F821


@functools.cache
def _kernel(dtype: DataType) -> CpuKernel:
    return CpuKernel(
        _expand_grad,
        f"expand_grad_{dtype.value}",
        accumulate=ACCUMULATE_DTYPES[dtype],
        load=load_fn(dtype),
        store=store_sum_fn(dtype),
        sum_view=scalar_function(
            specialize(_sum_view, f"sum_view_{dtype.value}", accumulate=ACCUMULATE_DTYPES[dtype], load=load_fn(dtype))
        ),
    )


class ExpandGradImpl(ExpandGrad):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype
        self._kernel = _kernel(dtype)

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        check_stream(stream, DeviceType.kCPU)
        prepared = prepare_expand_grad(DeviceType.kCPU, self.dtype, src_dims, src, dst_dims, dst)
        if prepared is not None:
            plan, src, dst = prepared
            pieces = -(-plan.row // BLOCK)
            sums = np.empty(plan.count if plan.row > 1 else 0, ACCUMULATE_DTYPES[self.dtype])
            self._kernel(
                plan.count * plan.num_outer * plan.inner,
                src,
                dst,
                sums,
                plan.count // plan.row * pieces,
                pieces,
                plan.row,
                plan.dst_strides,
                plan.src_strides,
                plan.outer_strides,
                plan.outer_src_strides,
                plan.num_outer,
                plan.inner,
                plan.inner_stride,
            )


@functools.cache
def _primitive(dtype: DataType) -> ExpandGradImpl:
    return ExpandGradImpl(dtype)


class ExpandGradFactoryImpl(ExpandGradFactory):
    def New(self, dtype) -> ExpandGrad | None:
        dtype = as_data_type(dtype)
        return _primitive(dtype) if dtype in ACCUMULATE_DTYPES else None

    def Combinations(self):
        for dtype in ACCUMULATE_DTYPES:
            yield None, (dtype,)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ExpandGradFactory, ExpandGradFactoryImpl)
