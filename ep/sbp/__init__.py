"""SBP (split, broadcast, partial sum): how a global tensor is spread over a placement's ranks, as
OneFlow's global view, with every ep.ops function's signatures and each rank's physical shapes and
attributes. Light to import: the op rules load on first use. Global tensors over MPI:
global_tensor.py (to_global), boxing.py, global_ops.py (the ep.ops functions on global tensors).
"""
from ep.sbp.physical import assemble, balanced_split, physical_shape, physical_slices, split_array
from ep.sbp.placement import Placement, placement
from ep.sbp.sbp import SBP, Broadcast, NdSbp, PartialSum, Split, broadcast, nd_sbp, partial_sum, split
from ep.sbp.signature import Physical, Signature, nd_signature, nd_signatures, physical, sbp_of, signatures
from ep.sbp.global_tensor import GlobalTensor, to_global



def __getattr__(name: str):
    # OPS loads ep.ops (through the package root's loader): derived, not imported with ep.sbp.
    if name == "OPS":
        from ep.sbp import signature

        return signature.OPS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "OPS",
    "SBP",
    "Broadcast",
    "GlobalTensor",
    "NdSbp",
    "PartialSum",
    "Physical",
    "Placement",
    "Signature",
    "Split",
    "assemble",
    "balanced_split",
    "broadcast",
    "nd_sbp",
    "nd_signature",
    "nd_signatures",
    "partial_sum",
    "physical",
    "physical_shape",
    "physical_slices",
    "placement",
    "sbp_of",
    "signatures",
    "split",
    "split_array",
    "to_global",
]
