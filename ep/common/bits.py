"""Reinterpreting a number's bits as another type (LLVM bitcast), inside CPU and CUDA kernels."""
from numba import types
from numba.extending import intrinsic


def _bitcast(from_type: types.Type, to_type: types.Type):
    @intrinsic
    def bitcast(typingctx, value):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(to_type))

        return to_type(from_type), codegen

    return bitcast


int32_from_float32 = _bitcast(types.float32, types.int32)
float32_from_int32 = _bitcast(types.int32, types.float32)
uint32_from_float32 = _bitcast(types.float32, types.uint32)
float32_from_uint32 = _bitcast(types.uint32, types.float32)
