"""Gather on CUDA, and the kernels BatchGather shares: one thread per output move unit, worked
back from its offset with divisions by invariant sizes (32- or 64-bit: fast_divmod.needs_wide).

Rows move as raw units of the widest size dividing the row and both buffers' addresses; 16-byte
units are one 128-bit load and store (pack.move16_function). With check_bounds a pass over the
indices is queued first and a bad index raised at the stream's Sync (gather_common).
"""
from __future__ import annotations

import numba

from ep.common.jit import bound, specialize, template
from ep.common.math import fast_divmod
from ep.common.primitive.byte_units import UNITS, as_units, move_unit, unit_dtype
from ep.common.primitive.gather import GatherFactoryImpl
from ep.common.runtime.buffer import address, kept_for
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, device_function, keep_launch
from ep.cuda.pack import move16_function
from ep.cuda.primitive import gather_common
from ep.include.primitive.gather import GatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

WIDEST_UNIT = 16


@template("WIDE16", "move16")
def _move(in_, out, t, src, found):
    # gather_common's visit: out's element t is in_'s element src, or 0.
    if found:
        if bound.WIDE16:
            bound.move16(out, t * 2, in_, src * 2)
        else:
            out[t] = in_[src]
    elif bound.WIDE16:
        out[t * 2] = 0
        out[t * 2 + 1] = 0
    else:
        out[t] = 0


@function_cache("kernels")
def gather_kernel(indices_dtype: DataType, unit: int, wide: bool, batched: bool) -> CudaKernel:
    """The gather kernel of an index dtype, move unit, index width, and with or without batches."""
    units = numba.from_dtype(unit_dtype(unit))[::1]
    visit = device_function(specialize(_move, f"move_u{unit}", WIDE16=unit == 16, move16=move16_function()))
    name = f"{'batch_' if batched else ''}gather_{indices_dtype.value}_u{unit}"
    return gather_common.indexed_kernel(name, indices_dtype, units, units, wide, batched, visit)


class CudaGatherKernels(gather_common.CudaIndexedKernels):
    def enqueue(self, primitive, sizes, kept, stream, indices, in_, out) -> None:
        # A repeated launch with the same buffers finds its configured kernel and arguments kept.
        launch = kept_for(stream.launches, (kept, id(in_), id(out)), in_, out)
        if launch is None:
            if sizes.gathered_count == 0:
                return
            launch = self._keep(primitive, sizes, kept, stream, in_, out)
        launch[0](indices, *launch[1])

    def _keep(self, primitive, sizes, kept, stream, in_, out) -> tuple:
        """(the configured kernel, its arguments after the indices) for these buffers on stream, kept there."""
        # A launch's move unit depends on its buffers' addresses: plans are kept by their low bits.
        alignment = (address(in_) | address(out) if sizes.params_count else address(out)) & (WIDEST_UNIT - 1)
        prepared = kept.launches.get(alignment)
        if prepared is None:
            prepared = kept.launches[alignment] = self._prepare(primitive, sizes, alignment)
        kernel, unit, total, args = prepared
        units = (as_units(in_, sizes.params_count, unit), as_units(out, sizes.gathered_count, unit))
        return keep_launch(stream, (kept, id(in_), id(out)), (kernel.configured(stream, total), (*units, *args)), in_, out)

    @staticmethod
    def _prepare(primitive, sizes, alignment: int) -> tuple:
        """(kernel, unit, total, arguments after the buffers) of a launch whose buffers' addresses
        have these low bits."""
        # Every size is now bounded by a buffer's length, except gather when in_ is empty: then it is 0.
        row_bytes = sizes.inner * primitive.dtype.itemsize
        unit = move_unit(row_bytes | alignment, (), WIDEST_UNIT)
        inner = row_bytes // unit
        total = sizes.batch * sizes.outer * sizes.num_indices * inner
        # The kernel reads indices below index_count only.
        wide = fast_divmod.needs_wide(sizes.params_count * primitive.dtype.itemsize // unit, total, sizes.index_count)
        args = gather_common.indexed_args(sizes, total, inner, wide, primitive.wrap)
        return gather_kernel(primitive.indices_dtype, unit, wide, sizes.batch > 1), unit, total, args

    def all_kernels(self):
        for indices_dtype in INDEX_TYPES:
            for unit in UNITS:
                for wide in (False, True):
                    for batched in (False, True):
                        yield gather_kernel(indices_dtype, unit, wide, batched)
        yield from gather_common.bounds_kernels()


CUDA_GATHER_KERNELS = CudaGatherKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, GatherFactory, GatherFactoryImpl(DeviceType.kCUDA, CUDA_GATHER_KERNELS))
