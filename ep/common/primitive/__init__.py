"""Primitive logic shared by every device: argument checks, plans and shape folding done on the host."""
