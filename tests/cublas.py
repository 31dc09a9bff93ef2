"""CUDA float matmul is cuBLAS's (nvmath-python): its tests skip, saying why, where it cannot run."""
import pytest

from ep.common.runtime.cublas import cublas_missing


def missing(device: str) -> str | None:
    """Why float matmul cannot run on device here, or None where it can."""
    if device != "cuda":
        return None
    return cublas_missing()


def skip_without_cublas(device: str) -> None:
    """pytest.skip where device's float matmul cannot run here."""
    why = missing(device)
    if why is not None:
        pytest.skip(why)
