"""What every device shares, by layer: runtime/, math/ (compiled for both devices), primitive/ (host-side primitive logic), and jit (how kernels are built)."""
