"""Data types, devices, streams, storage checks and the scalar math shared by every device."""
