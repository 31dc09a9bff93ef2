"""The math written once and compiled for both devices: intrinsics, float16, special functions, the op formulas and their tables."""
