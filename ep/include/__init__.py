"""Interfaces (OneFlow's ep/include)."""
