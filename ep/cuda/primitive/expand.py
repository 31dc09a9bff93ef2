"""Expand on CUDA: the strided copy's kernels (ep.cuda.primitive.copy_nd) with broadcast strides."""
from __future__ import annotations

from ep.common.primitive.expand import ExpandFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.primitive.copy_nd import KERNELS
from ep.include.primitive.expand import ExpandFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ExpandFactory, ExpandFactoryImpl(DeviceType.kCUDA, KERNELS))
