"""The overlap rule holds for every registered primitive: an output that shares memory with an
input without being exactly its elements is refused. Every factory in the registry either
declares its launch (ep/common/primitive/launch.py, where the rule is generated) or is one of the
few with a rule of their own, named here with where it lives; a factory in neither fails."""
import numpy as np
import pytest
from numba import config

import ep
from ep.common.primitive.launch import Declaration, Out
from ep.include.primitive.primitive import RegisteredFactories
from ep.testing import to_device, to_numpy

# Primitives whose overlap rule is written by hand, and why.
OWN_RULE = {
    "MemcpyFactory": "bytes: refuses any overlap of dst and src (memcpy.py)",
    "MemsetFactory": "one buffer: nothing to overlap",
    "CopyNdFactory": "boxes of strided buffers: refuses boxes whose bytes intersect (copy_nd.py)",
    "ElementwiseFusedFactory": "arguments that are buffers or scalars by position (elementwise_fused.py)",
}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_registered_primitive_has_the_overlap_rule(device):
    missing = []
    for factory_type, factory in RegisteredFactories(device).items():
        name = factory_type.__name__
        declaration = getattr(getattr(factory, "primitive_type", None), "launch", None)
        if isinstance(declaration, Declaration):
            assert any(isinstance(b, Out) for b in declaration.buffers), f"{name}: declares no output"
        elif name not in OWN_RULE:
            missing.append(name)
    assert not missing, f"primitives without the overlap rule (declare their launch): {missing}"


def _shifted(device, n, dtype=np.float32):
    """A buffer of n + 1 elements on device, and its host copy."""
    host = (np.arange(n + 1) % 7 - 3).astype(dtype)
    return to_device(host, device), host


def test_elementwise_fused_refuses_a_shifted_output(device):
    from ep.include.primitive.elementwise_fused import Binary, Input

    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, (Binary(ep.BinaryOp.kMul, Input(0), Input(1)),), np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 8)
    other = to_device(np.ones(8, np.float32), device)
    with pytest.raises(ValueError, match=r"args\[0\], dsts\[0\]: share memory without being the same elements"):
        fused.Launch(stream, (buffer[:8], other), ((8,), (8,)), (buffer[1:],))
    np.testing.assert_array_equal(to_numpy(buffer), host)
    with pytest.raises(ValueError, match=r"dsts\[1\], dsts\[0\]: share memory"):
        two = ep.NewPrimitive(
            ep.ElementwiseFusedFactory, device, (Input(0), Binary(ep.BinaryOp.kAdd, Input(0), Input(1))), np.float32, np.float32
        )
        two.Launch(stream, (other, other), ((8,), (8,)), (buffer[:8], buffer[1:]))
    # In place: dst exactly an argument's elements, each read before it is written.
    x = to_device(host[:8].copy(), device)
    fused.Launch(stream, (x, other), ((8,), (8,)), (x,))
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), host[:8])


def test_matmul_refuses_c_sharing_a(device):
    matmul = ep.NewPrimitive(ep.MatmulFactory, device, np.float32, "N", "N")
    if matmul is None and device == "cuda" and config.ENABLE_CUDASIM:
        pytest.skip("cuBLAS cannot run on Numba's CUDA simulator (no GPU)")
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 4)
    b = to_device(np.eye(2, dtype=np.float32).ravel(), device)
    # c = a @ I with c one element after a: a BLAS would read a while writing it.
    with pytest.raises(ValueError, match="a, c: share memory; expected separate memory"):
        matmul.Launch(stream, 2, 2, 2, 1.0, buffer[:4], b, 0.0, buffer[1:])
    with pytest.raises(ValueError, match="a, c: share memory"):
        matmul.Launch(stream, 2, 2, 2, 1.0, buffer[:4], b, 0.0, buffer[:4])  # exact aliasing too
    np.testing.assert_array_equal(to_numpy(buffer), host)
