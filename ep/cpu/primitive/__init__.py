"""CPU primitives: one module per primitive, each registering its factory when the registry imports it."""
