"""CPU primitives; importing this package registers their factories."""
from ep.cpu.primitive import (  # noqa: F401 (imported for their registrations)
    batch_gather,
    broadcast_elementwise_binary,
    copy_nd,
    elementwise_unary,
    expand,
    expand_grad,
    gather,
    unsorted_segment_sum,
)
