"""Per-element kernels from one body.

A primitive whose kernel is "for each i < count, dst[i] = body(i, values)" (Fill, TensorFill and
Memset; an Arange would be one) writes body once: a scalar function of the element's index and the
launch's tuple of values, returning the element in dst's compute dtype. Each device makes the
kernel from it (ElementKernels: the CPU a ParallelFor span in ep/cpu/element.py, CUDA a grid-stride
kernel storing 16-byte packs where dst is aligned in ep/cuda/element.py), launched alike as
`kernel.launch(stream, count, dst, count, values)` on dst's flat storage.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from ep.common.runtime.data_type import DataType


@dataclass(frozen=True)
class Array:
    """An entry of values that is a flat device array of dtype, which body indexes."""

    dtype: np.dtype


class ElementKernels(abc.ABC):
    """What a device supplies: the kernel of a body."""

    @abc.abstractmethod
    def kernel(self, body, dst: DataType, values: tuple[np.dtype | Array, ...]):
        """The kernel writing body's elements to dst's storage, launched with values holding a
        scalar of each np.dtype and an array of each Array; compiled on its first launch."""
