"""The Operator layer: shapes, validation and dims folding, then NewPrimitive + Launch.

Conventions every op follows: attributes (attr0, attr1) are real numbers, Python or NumPy ints
and floats (a bool, a container or a string is a TypeError naming the attribute); scalar operands
promote as in NumPy 2 (NEP 50); an out= that overlaps an input gives NumPy's result, as if every
input were read first (the input is copied, except for an elementwise op run exactly in place).
Inputs may have any strides (negative and zero too); so may out= (as in NumPy and PyTorch), whose
elements must be apart (a stride 0 is a ValueError naming it): a strided out receives a C-contiguous
result, written through its strides by one more launch.
Each op also takes global tensors (ep.to_global) and returns one, sbp= its layout: its declaration
for them sits beside it (<family>_rules.py: its plan on metadata, SBP rules and local run).
"""
from ep.ops.add_n import add_n
from ep.ops.binary import binary
from ep.ops.composite import addcdiv, addcmul, clamp, lerp, masked_fill, nan_to_num, tril, triu
from ep.ops.describe import describe
from ep.ops.expand import expand, expand_grad, repeat
from ep.ops.full import full
from ep.ops.gather import batch_gather, gather, gather_grad, index_select, take_along_dim
from ep.ops.layout import cat, flip, roll, stack
from ep.ops.matmul import addmm, linear, matmul
from ep.ops.one_hot import one_hot
from ep.ops.pad import pad
from ep.ops.permute import permute
from ep.ops.scan import cummax, cummin, cumprod, cumsum, logcumsumexp
from ep.ops.scatter import index_add, scatter, scatter_add
from ep.ops.reduce import all, amax, amin, any, argmax, argmin, logsumexp, mean, norm, prod, std, sum, var
from ep.ops.softmax import log_softmax, log_softmax_grad, softmax, softmax_grad
from ep.ops.unary import unary
from ep.ops.where import where

# Each family's declarations for global tensors, beside its ops: handed to ep.sbp as they load.
from ep.ops import (  # noqa: E402, F401  (imported for their registration)
    add_n_rules, elementwise_rules, expand_rules, full_rules, fuse_rules, gather_rules, layout_rules, matmul_rules, one_hot_rules,
    reduce_rules, scan_rules, scatter_rules, softmax_rules, where_rules,
)

__all__ = ["add_n", "addcdiv", "addcmul", "addmm", "binary", "cat", "clamp", "flip", "index_select", "lerp", "linear", "masked_fill", "nan_to_num", "roll", "stack", "describe", "batch_gather", "gather", "gather_grad", "expand", "expand_grad", "full", "matmul", "one_hot", "pad", "permute", "repeat", "softmax", "softmax_grad", "log_softmax", "log_softmax_grad", "unary", "where", "sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "any", "all", "logsumexp", "var", "std", "norm", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "tril", "triu", "take_along_dim", "index_add", "scatter", "scatter_add"]
