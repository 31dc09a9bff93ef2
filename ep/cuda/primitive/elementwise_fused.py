"""ElementwiseFused's CUDA kernel: one grid-stride kernel per expression and argument kinds.

A thread takes output elements by flat offset; an argument with the output's dims is read at that
offset, a broadcast one (row or column) at the offset split_offsets maps it to (32-bit fast_divmod,
two arguments per call: the calls share their divisions), a scalar as given; the composed formula
(the kernel's one expression-specific slot) gives every output's value, each written once.
Offsets are 32-bit: an output of more than 2**31 - 1 elements runs as launches of boxes that fit
(nd_index_offset_helper.boxes), as Where's kernel does.

Packs (ep.cuda.pack, as ElementwiseUnary's kernel): where every array argument is flat (the
output's dims: no broadcast), a work item is a pack of PACK consecutive elements, as many as 16
bytes of the widest storage dtype among the array arguments and outputs hold, at most MAX_LANES,
fewer where an op of the expression narrows them (fused_lanes); each array argument and output
moves a pack with one vector access where the launch found every one of their addresses aligned
to its pack, else every work item is one element, and a tail shorter than a pack goes element by
element. A plan with a broadcast argument runs the per-element kernel (split_offsets per element).
Either way a call is one launch per box (one below 2**31 elements), with no host sync.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Iterator

import numba
import numpy as np
from numba import cuda, types

from ep.common.jit import bound, define, template
from ep.common.math import fast_divmod
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.fast_divmod import index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, boxes, split_args, split_offsets
from ep.common.primitive.elementwise_fused import (
    FLAT, SCALAR, ElementwiseFusedFactoryImpl, ElementwiseFusedImpl, ElementwiseFusedKernels, FusedPlan, output_strides,
)
from ep.common.primitive.fused_formula import GROUP, children, grouped, result
from ep.common.runtime.buffer import address
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import PACK_BYTES, pack_bytes, pack_count, pack_functions, pack_lanes
from ep.cuda.primitive.broadcast_elementwise_binary import NARROW_PACKS as BINARY_NARROW_PACKS
from ep.cuda.primitive.elementwise_unary import FLOAT64_FORMULAS, NARROW_PACKS
from ep.include.primitive.elementwise_fused import ElementwiseFusedFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unary_op import UnaryOp

_INDEX = size_type(wide=False)
# intrinsics.opaque, or the simulator's stand-in: the grid-stride step LLVM does not unroll.
_OPAQUE = pack_functions(1)[3]
_DIMS = types.UniTuple(_INDEX, SPLIT_DIMS)
# On CUDA a kernel only tells the output's own elements (flat) from broadcast ones (strided).
STRIDED = "strided"


@functools.lru_cache(maxsize=256)
def fused_kernel(kinds: tuple[str, ...], outputs: int) -> Callable:
    """The kernel template (slots: compute, INDEX, opaque, and DIVMOD with strided arguments) for arguments of kinds
    (flat, strided or scalar) and that many outputs."""
    strided = [i for i, kind in enumerate(kinds) if kind == STRIDED]
    # Pairs of strided arguments per split_offsets call; an odd one is paired with itself.
    pairs = [(strided[p], strided[min(p + 1, len(strided) - 1)]) for p in range(0, len(strided), 2)]
    parameters = [f"a{i}" for i in range(len(kinds))] + [f"o{j}" for j in range(outputs)] + ["count"]
    if strided:
        parameters += ["ndim", "sizes", "multipliers", "shifts"] + [f"s{i}" for i in strided] + [f"outer{i}" for i in strided]
    lines = ["i = bound.INDEX(cuda.grid(1))", "step = bound.INDEX(cuda.gridsize(1))", "while i < count:"]
    for first, second in pairs:
        targets = f"p{first}, p{second}" if first != second else f"p{first}, _"
        lines.append(
            f"    {targets} = split_offsets(i, ndim, sizes, multipliers, shifts, s{first}, s{second}, outer{first}, outer{second}, bound.DIVMOD)"
        )
    operands = [f"a{i}" if kind == SCALAR else f"a{i}[p{i}]" if kind == STRIDED else f"a{i}[i]" for i, kind in enumerate(kinds)]
    lines.append(f"    r = bound.compute({grouped(operands)})")
    lines += [f"    o{j}[i] = {result(j, outputs)}" for j in range(outputs)]
    lines.append("    i = bound.opaque(bound.INDEX(i + step))")
    source = f"def kernel({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in lines)
    namespace = {"bound": bound, "cuda": cuda, "split_offsets": split_offsets}
    slots = ("compute", "INDEX", "opaque") + (("DIVMOD",) if strided else ())
    return template(*slots)(define(source, "kernel", namespace))


@functools.lru_cache(maxsize=256)
def packed_kernel(scalars: tuple[bool, ...], outputs: int) -> Callable:
    """The kernel template of a flat plan (every array argument has the output's dims), moving packs:
    slots compute, INDEX, opaque, PACK, pack_array, load_pack, store_pack, and the storage types of
    the array arguments' lanes (T<i>) and the outputs' (D<j>). scalars: which arguments are Scalars."""
    arrays = [i for i, scalar in enumerate(scalars) if not scalar]
    # The outputs are dst, dst1, ...: the names ptxas.traits counts as the buffers a kernel stores.
    dst = ["dst"] + [f"dst{j}" for j in range(1, outputs)]
    parameters = [f"a{i}" for i in range(len(scalars))] + dst + ["count", "packs"]
    # packs: work items 0 to packs - 1 are full packs of PACK elements (the host found every buffer
    # aligned to its pack), the rest one element each. The lane loop has a constant trip count: LLVM
    # unrolls it and keeps the lanes in registers.
    lines = [f"x{i} = bound.pack_array(bound.T{i})" for i in arrays]
    lines += [f"y{j} = bound.pack_array(bound.D{j})" for j in range(outputs)]
    lines += [
        "w = bound.INDEX(cuda.grid(1))",
        "step = bound.INDEX(cuda.gridsize(1))",
        "work = bound.INDEX(count - packs * (bound.PACK - 1))",
        "while w < work:",
        "    full = w < packs",
        "    i = bound.INDEX(w * bound.PACK if full else w + packs * (bound.PACK - 1))",
        "    lanes = bound.PACK if full else 1",
    ]
    lines += [f"    bound.load_pack(x{i}, a{i}, i, full, 1)" for i in arrays]
    operands = [f"a{i}" if scalar else f"x{i}[k]" for i, scalar in enumerate(scalars)]
    lines += [
        "    for k in range(bound.PACK):",
        "        if k < lanes:",
        f"            r = bound.compute({grouped(operands)})",
    ]
    lines += [f"            y{j}[k] = {result(j, outputs)}" for j in range(outputs)]
    lines += [f"    bound.store_pack({dst[j]}, i, y{j}, full)" for j in range(outputs)]
    lines.append("    w = bound.opaque(bound.INDEX(w + step))")
    source = f"def kernel({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in lines)
    slots = ("compute", "INDEX", "opaque", "PACK", "pack_array", "load_pack", "store_pack")
    slots += tuple(f"T{i}" for i in arrays) + tuple(f"D{j}" for j in range(outputs))
    return template(*slots)(define(source, "kernel", {"bound": bound, "cuda": cuda}))


# At most this many lanes per pack: an expression composes several formulas per lane, and at 8 lanes
# (float16's 16 bytes) three-input float16 expressions with a tanh, sigmoid, gelu, erf, silu, mish
# or even sqrt spilled under the 32 registers of full occupancy (the ptxas check); at 4 they fit.
MAX_LANES = 4
# Fewer lanes where the expression holds these unary ops: libdevice's sin/cos/tan keep their argument
# reduction per lane (float32 sin(x * y + z) spilled at 4 lanes, fits at 2), as the binary kernels'
# trigonometric derivatives (BINARY_NARROW_PACKS).
_TRIGONOMETRIC = frozenset({UnaryOp.kSin, UnaryOp.kCos, UnaryOp.kTan})
TRIGONOMETRIC_LANES = 2


def fused_lanes(primitive: ElementwiseFusedImpl) -> int:
    """Elements per pack of primitive's flat kernel: as many as 16 bytes (PACK_BYTES) of the widest
    storage dtype among its array arguments and outputs hold, or the fewer bytes ElementwiseUnary's
    and BroadcastElementwiseBinary's NARROW_PACKS give an op of the expression (there 16 spill), and
    at most MAX_LANES (TRIGONOMETRIC_LANES with a sin, cos or tan)."""
    def walk(node: tuple) -> tuple[int, bool]:
        if node[0] == "unary":
            own, trig = NARROW_PACKS.get((node[1], node[2]), PACK_BYTES), node[1] in _TRIGONOMETRIC
        elif node[0] == "binary":
            own, trig = BINARY_NARROW_PACKS.get((node[1], node[2]), PACK_BYTES), False
        else:
            own, trig = PACK_BYTES, False
        for child in children(node):
            bytes_, t = walk(child)
            own, trig = min(own, bytes_), trig or t
        return own, trig

    found = [walk(node) for node in primitive.outputs]
    dtypes = [d.storage_dtype for i, d in enumerate(primitive.dtypes) if i not in primitive.scalars]
    dtypes += [d.storage_dtype for d in primitive.dst_dtypes]
    lanes = pack_lanes(*dtypes, pack_bytes=min(bytes_ for bytes_, _ in found))
    return min(lanes, TRIGONOMETRIC_LANES if any(trig for _, trig in found) else MAX_LANES)


def _in_float64(primitive: ElementwiseFusedImpl) -> bool:
    """Whether the expression computes in float64 anywhere (register pairs: no launch bounds)."""
    def walk(node: tuple) -> bool:
        if node[0] == "unary" and node[1] in FLOAT64_FORMULAS:
            return True
        dtypes = [node[2]] if node[0] in ("input", "scalar") else [node[1]] if node[0] == "where" else [node[2], node[3]]
        return any(d.compute_dtype == np.float64 for d in dtypes) or any(walk(c) for c in children(node))

    return any(walk(node) for node in primitive.outputs)




def _divides(primitive: ElementwiseFusedImpl) -> bool:
    """Whether the expression divides integers (the kernel's name then says so: "_divides")."""
    def walk(node: tuple) -> bool:
        own = node[0] == "binary" and BINARY_FUNCTORS[node[1]].divides_integers and not node[2].is_floating
        return own or any(walk(c) for c in children(node))

    return any(walk(node) for node in primitive.outputs)


class CudaElementwiseFusedKernels(ElementwiseFusedKernels):
    def kernel(self, primitive: ElementwiseFusedImpl, kinds: tuple[str, ...]) -> CudaKernel:
        """primitive's kernel for arguments of kinds, made once per primitive and kinds."""
        kinds = tuple(kind if kind in (FLAT, SCALAR) else STRIDED for kind in kinds)
        found = primitive.device_kernels.get(kinds)
        if found is not None:
            return found
        argtypes = []
        for i, dtype in enumerate(primitive.dtypes):
            scalar = i in primitive.scalars
            argtypes.append(numba.from_dtype(dtype.compute_dtype) if scalar else numba.from_dtype(dtype.storage_dtype)[::1])
        argtypes += [numba.from_dtype(dtype.storage_dtype)[::1] for dtype in primitive.dst_dtypes]
        argtypes.append(_INDEX)
        strided = kinds.count(STRIDED)
        index = index_bindings(wide=False)
        name = "fused_" + ("strided" if strided else "flat") + ("_divides" if _divides(primitive) else "")
        # Past GROUP buffers their pointers and packs alone exceed full occupancy's 32 registers.
        many = len(primitive.dtypes) + len(primitive.outputs) > GROUP
        options = dict(full_occupancy=not (many or _in_float64(primitive)), compute=primitive.formula)
        if strided:
            argtypes += [_INDEX, _DIMS, _DIMS, _DIMS] + [_DIMS] * strided + [_INDEX] * strided
            template_ = fused_kernel(kinds, len(primitive.outputs))
            kernel = CudaKernel(template_, name, argtypes, opaque=_OPAQUE, **options, **index)
        else:
            argtypes.append(_INDEX)  # packs
            del index["DIVMOD"]
            lanes = fused_lanes(primitive)
            pack_array, load, store, opaque_index = pack_functions(lanes)
            types_ = {f"T{i}": np.dtype(d.storage_dtype).type for i, d in enumerate(primitive.dtypes) if i not in primitive.scalars}
            types_.update({f"D{j}": np.dtype(d.storage_dtype).type for j, d in enumerate(primitive.dst_dtypes)})
            template_ = packed_kernel(tuple(kind == SCALAR for kind in kinds), len(primitive.outputs))
            kernel = CudaKernel(
                template_, name, argtypes, PACK=lanes, pack_array=pack_array, load_pack=load, store_pack=store,
                opaque=opaque_index, **options, **index, **types_,
            )
            kernel.lanes = lanes
        return primitive.device_kernels.setdefault(kinds, kernel)

    def kernels(self, primitive: ElementwiseFusedImpl) -> Iterator[CudaKernel]:
        kinds = [SCALAR if i in primitive.scalars else FLAT for i in range(len(primitive.dtypes))]
        yield self.kernel(primitive, tuple(kinds))
        yield self.kernel(primitive, tuple(kind if kind == SCALAR else STRIDED for kind in kinds))

    def launcher(self, primitive: ElementwiseFusedImpl, plan: FusedPlan) -> Callable[..., None]:
        kernel = self.kernel(primitive, plan.kinds)
        strided = [i for i, kind in enumerate(plan.kinds) if kind not in (FLAT, SCALAR)]
        limit = fast_divmod.FAST_DIVMOD_LIMIT
        # Beyond the limit the boxes are cut at the first run, after storage() has checked that the
        # buffers hold the plan's counts: dims no buffer could hold would take billions of boxes.
        parts = _parts(plan, strided, limit) if plan.count <= limit else None

        def boxes(values, outs) -> Iterator[tuple]:
            # (args, dsts, count, split) per box: the buffers from the box's first elements on.
            nonlocal parts
            if parts is None:
                parts = _parts(plan, strided, limit)
            for firsts, count, split in parts:
                args = values if not any(firsts) else [v if f is None else v[f:] for v, f in zip(values, firsts)]
                dsts = outs if not firsts[-1] else [o[firsts[-1]:] for o in outs]
                yield args, dsts, count, split

        if strided:

            def run(stream, values, outs) -> None:
                for args, dsts, count, split in boxes(values, outs):
                    kernel.launch(stream, count, *args, *dsts, count, *split)

            return run

        # A flat plan: packs where every buffer (array argument and output) is aligned to its pack.
        lanes = kernel.lanes
        arrays = [(i, pack_bytes(lanes, primitive.dtypes[i].storage_dtype)) for i, kind in enumerate(plan.kinds) if kind == FLAT]
        dst_packs = [pack_bytes(lanes, d.storage_dtype) for d in primitive.dst_dtypes]

        def run_packed(stream, values, outs) -> None:
            for args, dsts, count, _ in boxes(values, outs):
                misaligned = any(address(args[i]) % b for i, b in arrays) or any(address(d) % b for d, b in zip(dsts, dst_packs))
                packs, work = pack_count(lanes, count, misaligned)
                kernel.launch(stream, work, *args, *dsts, count, packs)

        return run_packed


def _parts(plan: FusedPlan, strided: list[int], limit: int) -> list[tuple]:
    """(each argument's first element (None for a scalar) and the output's, elements, the kernel's
    split arguments) per launch: one, or one per box of at most limit elements, so every offset a
    kernel computes fits in 32 bits."""
    parts = []
    dst_strides = output_strides(plan)
    for start, box in boxes(plan.dims, limit):
        k = len(plan.dims) - len(box)
        firsts = [None if s is None else sum(i * t for i, t in zip(start, s)) for s in plan.strides]
        firsts.append(sum(i * t for i, t in zip(start, dst_strides)))
        split: tuple = ()
        if strided:
            inner, outer = [], []
            for i in strided:
                ndim, sizes, multipliers, shifts, s, _, o, _ = split_args(box, plan.strides[i][k:], plan.strides[i][k:], wide=False)
                inner.append(s)
                outer.append(o)
            split = (ndim, sizes, multipliers, shifts, *inner, *outer)
        parts.append((tuple(firsts), math.prod(box), split))
    return parts


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ElementwiseFusedFactory, ElementwiseFusedFactoryImpl(DeviceType.kCUDA, CudaElementwiseFusedKernels()))
