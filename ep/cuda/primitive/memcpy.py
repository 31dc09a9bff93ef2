"""Memcpy on CUDA: the driver's asynchronous copies on the launch's stream (cuMemcpyHtoDAsync,
DtoHAsync, DtoDAsync through numba's device arrays); no kernel of ep's."""
from __future__ import annotations

import numpy as np

from ep.common.primitive.memcpy import MemcpyFactoryImpl, MemcpyKernels
from ep.common.runtime.buffer import kept
from ep.common.runtime.device import DeviceType
from ep.include.primitive.memcpy import MemcpyFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


def _head(array, count: int):
    return array[:count]


class CudaMemcpyKernels(MemcpyKernels):
    def copy(self, stream, dst, src, count: int) -> None:
        # Views of count bytes (kept for device arrays): numba copies whole arrays.
        dst, src = kept(_head, dst, count), kept(_head, src, count)
        if isinstance(dst, np.ndarray):
            # Into pageable host memory the driver returns once the bytes are there.
            src.copy_to_host(dst, stream=stream.native)
        else:
            dst.copy_to_device(src, stream=stream.native)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, MemcpyFactory, MemcpyFactoryImpl(DeviceType.kCUDA, CudaMemcpyKernels()))
