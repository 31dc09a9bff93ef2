"""What a new primitive leans on: kernel templates (ep.common.jit) and the generic factories
(ep.common.primitive.factory)."""
import numpy as np
import pytest
from numba import njit

from ep.common.jit import bound, linked, scalar_function, specialize, template
from ep.common.primitive.factory import DtypeFactory
from ep.common.runtime.data_type import DataType, FLOATING_TYPES
from ep.common.runtime.device import DeviceType
from ep.include.primitive.primitive import Primitive


def _doubles(x):
    return 2 * x


def _reads_a_slot(x):
    return bound.scale * x


@template("scale")
def _scaled(x):
    return bound.scale * x


@template("step")
def _steps_thrice(x):
    return bound.step(bound.step(bound.step(x)))


@scalar_function
def _plus_half(x):
    return x + 0.5


def test_a_linked_function_is_inlined_by_llvm_at_every_call():
    # linked (a kernel's step, called at many places): compiled once and linked, then inlined by
    # LLVM, so the kernel's optimized code calls it nowhere and computes what Numba's IR copies do.
    copied = njit(specialize(_steps_thrice, "steps_copied", step=_plus_half))
    linked_ = njit(specialize(_steps_thrice, "steps_linked", step=linked(_plus_half)))
    assert copied(1.0) == linked_(1.0) == 2.5
    code = linked_.inspect_llvm(linked_.signatures[0])
    calls = [line for line in code.splitlines() if "call" in line and "_plus_half" in line]
    assert "_plus_half" in code and not calls, calls
    # Inlined because linked marks it so (forceinline), not by LLVM's choice for a small function,
    # which left logsumexp's step a call; one dispatcher per function, whichever kernel links it.
    assert linked(_plus_half) is linked(_plus_half)
    assert "alwaysinline" in linked(_plus_half).inspect_llvm(linked(_plus_half).signatures[0])


def test_a_function_reading_no_slot_is_a_template_of_none():
    assert njit(specialize(_doubles, "doubles"))(3) == 6
    with pytest.raises(TypeError, match=r"bindings \['scale'\] do not fill its slots \[\]"):
        specialize(_doubles, "doubles", scale=2)


def test_a_slot_needs_its_declaration():
    with pytest.raises(TypeError, match=r"_reads_a_slot: is not a kernel template; declare its slots with @template"):
        specialize(_reads_a_slot, "reads")
    assert njit(specialize(_scaled, "scaled", scale=3))(2) == 6
    with pytest.raises(TypeError, match=r"declares slots \['other'\] but its body reads \['scale'\]"):
        template("other")(_reads_a_slot)


class _Made(Primitive):
    def __init__(self, device_type, kernels, dtype):
        self.dtype = dtype
        self.kernel = kernels.kernel(dtype)

    def Launch(self, stream):
        pass


class _Kernels:
    def kernel(self, dtype):
        return ("kernel", dtype)


class _Factory(DtypeFactory):
    primitive_type = _Made
    dtypes = FLOATING_TYPES

    def Samples(self, op, dtypes):
        return iter(())


def test_a_dtype_factory_makes_one_primitive_per_listed_dtype():
    factory = _Factory(DeviceType.kCPU, _Kernels())
    made = factory.New(np.float32)
    assert made.dtype is DataType.kFloat and factory.New("float32") is made
    assert factory.New(np.int32) is None
    with pytest.raises(TypeError, match=r"^dtype: .*complex64"):
        factory.New(np.complex64)
    assert list(factory.Combinations()) == [(None, (dtype,)) for dtype in FLOATING_TYPES]
    # Kernels without all_kernels() (per-element ones): the kernel of each combination's primitive.
    assert list(factory.Kernels()) == [("kernel", dtype) for dtype in FLOATING_TYPES]
