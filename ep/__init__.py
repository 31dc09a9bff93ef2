"""ep: OneFlow-style execution-provider primitives, on the CPU and NVIDIA GPUs, with Numba."""
from ep.common.runtime.caches import cache_clear, cache_info
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import Device, DeviceType, GetDevice, Stream
from ep.common.runtime.dlpack import from_dlpack
from ep.include.primitive import ENUMS, FACTORIES, Factory, NewPrimitive, Primitive

# Every factory interface and op enum, as the interfaces' package finds them (one file each).
globals().update(FACTORIES)
globals().update(ENUMS)

__version__ = "0.1.0"


def __getattr__(name: str):
    # ep.ops imports Numba; loading it on first use keeps `import ep` light.
    if name == "ops":
        import ep.ops

        return ep.ops
    if name == "fuse":
        from ep.ops.fuse import fuse

        return fuse
    raise AttributeError(f"module 'ep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "ops", "fuse"})

__all__ = sorted(
    [*FACTORIES, *ENUMS, "DataType", "Device", "DeviceType", "Factory", "GetDevice", "NewPrimitive", "Primitive", "Stream"]
    + ["cache_clear", "cache_info", "from_dlpack", "fuse", "ops"]
)

# SBP signatures and placements (light: the op declarations load on first use).
from ep import sbp  # noqa: E402
from ep.sbp.placement import placement  # noqa: E402


def _declare_ops() -> None:
    """ep.ops declares every op to ep.sbp as it loads (ep.sbp imports nothing of ep.ops)."""
    import ep.ops  # noqa: F401


sbp.signature.set_loader(_declare_ops)

__all__ += ["placement", "sbp"]

# Global tensors over MPI (mpi4py loads on the first one).
from ep.sbp.global_tensor import GlobalTensor, to_global  # noqa: E402

__all__ += ["GlobalTensor", "to_global"]
