"""`python -m ep bench`: ep against NumPy and PyTorch (CuPy and PyTorch on CUDA), with the
machine's copy bandwidth as the limit; see BENCHMARKS.md."""
from ep.bench.runner import main

__all__ = ["main"]
