"""Every LLVM-level operation ep's kernels use that Numba's Python subset cannot express.

Each is a numba `@intrinsic`: a typing rule and a few lines of LLVM IR, inlined where it is
called. Those marked "CPU only" emit instructions NVVM does not accept, and the one marked "CUDA
only" PTX inline asm; the rest compile for both targets. Everything else in ep/common/math is
plain Python on top of these.
"""
from __future__ import annotations

import math
import operator

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# Bytes one vector store writes (AVX); stream_copy_vector/stream_fill_vector addresses are multiples of it.
VECTOR_BYTES = 32


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


@intrinsic
def float_bits(typingctx, value):
    """A float32's or float64's bits as the signed integer of its width (int32, int64)."""
    bits = types.int32 if value == types.float32 else types.int64

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(bits))

    return bits(value), codegen


@intrinsic
def float_from_bits(typingctx, bits, like):
    """The float of like's type (float32, float64) whose bits are the integer bits, cut to its width."""
    width = types.int32 if like == types.float32 else types.int64

    def codegen(context, builder, signature, args):
        cut = context.cast(builder, args[0], signature.args[0], width)
        return builder.bitcast(cut, context.get_value_type(like))

    return like(types.unliteral(bits), like), codegen


@intrinsic
def cast_like(typingctx, value, like):
    """value converted to like's type: ints wrap, bool is value != 0, float -> int saturates.

    A float goes to an integer truncated toward zero, clamped to the integer's range, NaN to 0:
    what CUDA's cvt.rzi.sat does. LLVM's bare fptosi is poison out of range, so a CPU loop's
    vector body and scalar tail would disagree (int8(300.7) gave 127 in one and 44 in the other).
    """

    def codegen(context, builder, signature, args):
        source, target = signature.args[0], signature.return_type
        if isinstance(source, types.Float) and isinstance(target, types.Integer):
            return _saturating_float_to_int(builder, args[0], target)
        return context.cast(builder, args[0], source, target)

    return like(types.unliteral(value), like), codegen


@intrinsic
def wide_integer(typingctx, value):
    """An integer or bool widened to 64 bits: uint64 stays uint64, everything else becomes int64
    (sign- or zero-extended). Integer formulas work in it: every value of every integer dtype is
    exact there, and no mixed int64-uint64 operation (which Numba computes in float64) arises."""
    wide = types.uint64 if value == types.uint64 else types.int64

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], signature.return_type)

    return wide(types.unliteral(value)), codegen


def _saturating_float_to_int(builder, value, target: types.Integer):
    """value truncated toward zero and clamped to target's range, NaN -> 0, as selects (no branch).

    The bounds compared against are exact in every float type: the minimum (0 or -2**(n-1)) and
    maximum + 1 (a power of two). fptosi/fptoui is poison only where a select discards it.
    """
    integer = ir.IntType(target.bitwidth)
    convert = builder.fptosi if target.signed else builder.fptoui
    result = convert(value, integer)
    high = builder.fcmp_ordered(">=", value, ir.Constant(value.type, float(target.maxval + 1)))
    result = builder.select(high, ir.Constant(integer, target.maxval), result)
    low = builder.fcmp_ordered("<", value, ir.Constant(value.type, float(target.minval)))
    result = builder.select(low, ir.Constant(integer, target.minval), result)
    nan = builder.fcmp_unordered("uno", value, value)
    return builder.select(nan, ir.Constant(integer, 0), result)


@intrinsic
def divide(typingctx, a, b):
    """a / b in IEEE arithmetic: inf or NaN where b == 0.

    A CPU @njit kernel (error_model="python") checks `/` for a zero divisor and raises
    ZeroDivisionError, which also keeps the loop from vectorizing; this emits the bare fdiv.
    """
    common = typingctx.unify_types(types.unliteral(a), types.unliteral(b))
    if not isinstance(common, types.Float):
        return None

    def codegen(context, builder, signature, args):
        a, b = (context.cast(builder, v, t, common) for v, t in zip(args, signature.args))
        return builder.fdiv(a, b)

    return common(a, b), codegen


def _llvm_float_intrinsic(name: str):
    """An intrinsic calling llvm.<name>.f32/.f64 on a float on the CPU, libdevice's __nv_<name>(f)
    on CUDA: NVVM 13.0's verifier rejects a call of llvm.trunc (13.5's takes it)."""

    @intrinsic
    def call(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, signature, args):
            value_type = args[0].type
            single = value_type == ir.FloatType()
            if context.target_name == "cpu":
                symbol = f"llvm.{name}.{'f32' if single else 'f64'}"
            else:
                symbol = f"__nv_{name}{'f' if single else ''}"
            fnty = ir.FunctionType(value_type, [value_type])
            return builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol), args)

        return x(x), codegen

    return call


round_down = _llvm_float_intrinsic("floor")
round_up = _llvm_float_intrinsic("ceil")
round_toward_zero = _llvm_float_intrinsic("trunc")


@intrinsic
def product(typingctx, a, b):
    """a * b, typed as Python's; a float32/float64 product on CUDA by libdevice's __nv_fmul_rn or
    __nv_dmul_rn, which NVVM never contracts with an add into an FMA (a plain one it does, by
    default): a fused expression then rounds as the unfused ops, and the CPU, do."""
    signature = typingctx.resolve_function_type(operator.mul, (a, b), {})
    if signature is None:
        return None

    def codegen(context, builder, signature, args):
        result = signature.return_type
        if not isinstance(result, types.Float):
            return context.compile_internal(builder, lambda p, q: p * q, signature, args)
        x, y = (context.cast(builder, v, t, result) for v, t in zip(args, signature.args))
        if context.target_name == "cpu" or result not in (types.float32, types.float64):
            return builder.fmul(x, y)
        symbol = "__nv_fmul_rn" if result == types.float32 else "__nv_dmul_rn"
        fnty = ir.FunctionType(x.type, [x.type, x.type])
        return builder.call(cgutils.get_or_insert_function(builder.module, fnty, symbol), [x, y])

    return signature, codegen


@intrinsic
def frem(typingctx, a, b):
    """C fmod of two floats of a's type.

    LLVM's frem is C fmod on the CPU (a libm call), but NVVM expands it as a - b * trunc(a / b),
    which is inexact for large quotients; there libdevice's fmod is exact.
    """

    def codegen(context, builder, signature, args):
        if context.target_name == "cpu":
            return builder.frem(args[0], args[1])
        return context.get_function(math.fmod, signature)(builder, args)

    return a(a, a), codegen


@intrinsic
def mul_add(typingctx, a, b, c):
    """a * b + c for float32, fused where the target has an FMA (x86 FMA3, every CUDA GPU).

    llvm.fmuladd: Numba never contracts a * b + c by itself without fastmath.
    """

    def codegen(context, builder, signature, args):
        t = args[0].type
        fn = builder.module.declare_intrinsic("llvm.fmuladd", [t], ir.FunctionType(t, [t, t, t]))
        return builder.call(fn, args)

    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def mulhi_add_shift_u32(typingctx, n, multiplier, shift):
    """(mulhi(multiplier, n) + n) >> shift in uint32: the step of fast_divmod.

    Written in LLVM IR because Numba widens uint32 arithmetic to 64 bits, and NVVM then keeps a
    64-bit multiply instead of the 32-bit multiply-high this needs.
    """

    def codegen(context, builder, signature, args):
        n, multiplier, shift = args
        i32, i64 = ir.IntType(32), ir.IntType(64)
        if "nvptx" in builder.module.triple:
            mulhi = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, i32]), "llvm.nvvm.mulhi.ui")
            high = builder.call(mulhi, [multiplier, n])
        else:
            wide = builder.mul(builder.zext(multiplier, i64), builder.zext(n, i64))
            high = builder.trunc(builder.lshr(wide, ir.Constant(i64, 32)), i32)
        return builder.lshr(builder.add(high, n), shift)

    return types.uint32(types.uint32, types.uint32, types.uint32), codegen


def _element_pointer(context, builder, array_type, array, index, pointee=None):
    """A pointer to array[index], cast to pointee* when given."""
    data = context.make_array(array_type)(context, builder, array).data
    pointer = builder.gep(data, [index], inbounds=True)
    return pointer if pointee is None else builder.bitcast(pointer, pointee.as_pointer())


@intrinsic
def move16(typingctx, dst, dst_word, src, src_word):
    """Copy the 16 bytes at word src_word of src to word dst_word of dst (uint64 arrays, 16-byte aligned).

    One vector load and store: Numba's array accesses carry only the element's alignment, so two
    uint64 accesses would never be fused into the 128-bit transaction a GPU moves fastest.
    """

    def codegen(context, builder, signature, args):
        vector = ir.VectorType(ir.IntType(64), 2)
        src_pointer = _element_pointer(context, builder, signature.args[2], args[2], args[3], vector)
        dst_pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], vector)
        builder.store(builder.load(src_pointer, align=16, typ=vector), dst_pointer, align=16)
        return context.get_dummy_value()

    return types.none(dst, types.intp, src, types.intp), codegen


def _pack_words(context, builder, memory_type, memory, index, local_type, local, pack_lanes):
    """(pointer to the pack at memory[index], its type: a vector of words, pointers to the words of
    the local lanes, alignment): words of 32 bits, or of the element where wider or the pack narrower."""
    size = context.get_abi_sizeof(context.get_data_type(memory_type.dtype))
    pack = size * pack_lanes
    word = ir.IntType(8 * (size if size >= 4 or pack % 4 else 4))
    words = pack * 8 // word.width
    vector_type = ir.VectorType(word, words)
    pointer = _element_pointer(context, builder, memory_type, memory, index, vector_type)
    zero = context.get_constant(types.intp, 0)
    lane_words = _element_pointer(context, builder, local_type, local, zero, word)
    slots = [builder.gep(lane_words, [ir.Constant(ir.IntType(32), w)], source_etype=word) for w in range(words)]
    return pointer, vector_type, slots, pack


def _forget_lanes(builder, vector_type, slots):
    """Zero all of a thread's lanes, word by word: what they held before is dead, so LLVM keeps no
    lane in a register from one work item to the next (it would for lanes a short pack leaves
    unwritten). Zeros, not undef: LLVM deletes a store of undef."""
    for slot in slots:
        builder.store(ir.Constant(vector_type.element, 0), slot)


# A pack moved between global memory and a thread's lanes (a local array of pack_lanes elements):
# one vector access for a full pack, else lane 0 alone (a work item of one element). Numba's array
# accesses carry only the element's alignment, so element accesses are never fused into the 64- or
# 128-bit transactions a GPU moves fastest. The lanes are read and written word by word (32-bit
# words, or the element where wider): LLVM then keeps an int8 or float16 pack packed in four
# registers, not one register per lane.


@intrinsic
def load_pack(typingctx, lanes_array, src, s, full, stride, pack_lanes):
    """A full pack (pack_lanes, a constant, of lanes_array's elements) from src[s] on: with stride 1
    one vector load, aligned to the pack's bytes (pack_lanes times the element size, at most 16);
    with stride 0 src[s] in every lane. Not full: src[s] into lane 0."""
    if not isinstance(pack_lanes, types.IntegerLiteral):
        return None
    lanes = pack_lanes.literal_value

    def codegen(context, builder, signature, args):
        local_type, src_type = signature.args[0], signature.args[1]
        local, src, index, full, stride = args[:5]
        element = context.get_data_type(src_type.dtype)
        pointer, vector_type, slots, pack = _pack_words(context, builder, src_type, src, index, local_type, local, lanes)
        _forget_lanes(builder, vector_type, slots)
        contiguous = builder.icmp_signed("==", stride, ir.Constant(stride.type, 1))
        with builder.if_else(builder.and_(full, contiguous)) as (vector, elements):
            with vector:
                value = builder.load(pointer, align=pack, typ=vector_type)
                for w, slot in enumerate(slots):
                    builder.store(builder.extract_element(value, ir.Constant(ir.IntType(32), w)), slot)
            with elements:
                value = builder.load(_element_pointer(context, builder, src_type, src, index), typ=element)
                zero = context.get_constant(types.intp, 0)
                builder.store(value, _element_pointer(context, builder, local_type, local, zero))
                with builder.if_then(full):
                    for k in range(1, lanes):
                        target = _element_pointer(context, builder, local_type, local, context.get_constant(types.intp, k))
                        builder.store(value, target)
        return context.get_dummy_value()

    return types.none(lanes_array, src, types.intp, types.boolean, types.intp, pack_lanes), codegen


@intrinsic
def store_pack(typingctx, dst, d, lanes_array, full, pack_lanes):
    """A full pack (pack_lanes, a constant, of lanes_array's elements) into dst[d] on with one
    vector store, aligned to the pack's bytes (pack_lanes times the element size, at most 16). Not
    full: lane 0 into dst[d]."""
    if not isinstance(pack_lanes, types.IntegerLiteral):
        return None
    lanes = pack_lanes.literal_value

    def codegen(context, builder, signature, args):
        dst_type, local_type = signature.args[0], signature.args[2]
        dst, index, local, full = args[:4]
        element = context.get_data_type(dst_type.dtype)
        pointer, vector_type, slots, pack = _pack_words(context, builder, dst_type, dst, index, local_type, local, lanes)
        with builder.if_else(full) as (vector, elements):
            with vector:
                value = ir.Constant(vector_type, None)
                for w, slot in enumerate(slots):
                    word = builder.load(slot, typ=vector_type.element)
                    value = builder.insert_element(value, word, ir.Constant(ir.IntType(32), w))
                builder.store(value, pointer, align=pack)
            with elements:
                zero = context.get_constant(types.intp, 0)
                value = builder.load(_element_pointer(context, builder, local_type, local, zero), typ=element)
                builder.store(value, _element_pointer(context, builder, dst_type, dst, index))
        _forget_lanes(builder, vector_type, slots)
        return context.get_dummy_value()

    return types.none(dst, types.intp, lanes_array, types.boolean, pack_lanes), codegen


# NVPTX inline-asm constraints by integer width.
_PTX_REGISTER = {16: "h", 32: "r", 64: "l"}


@intrinsic
def opaque(typingctx, value):
    """The integer value, passed through an empty inline asm the optimizer cannot see through. CUDA only.

    A grid-stride loop whose counter steps through it keeps one body: LLVM unrolls a loop only when
    it can compute its trip count, and NVPTX otherwise unrolls it four times, which in a kernel
    already moving a pack per iteration only adds code (and registers).
    """
    if not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        integer = args[0].type
        register = _PTX_REGISTER[integer.width]
        return builder.asm(ir.FunctionType(integer, [integer]), "", f"={register},0", [args[0]], side_effect=False)

    return value(value), codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that array[index] will soon be read: its cache line is fetched into every cache level.

    A hint only (never faults), for reads the hardware prefetcher cannot predict, such as the
    rows a gather reads next. CPU only.
    """

    def codegen(context, builder, signature, args):
        byte = ir.IntType(8)
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], byte)
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [byte.as_pointer(), i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
        # (address, read, keep in every cache level, data cache)
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(array, types.intp), codegen


@intrinsic
def stack_array(typingctx, count, dtype):
    """A 1-d array of count (a constant) elements of dtype (a NumPy number class) in the calling
    function's stack frame: scratch that costs no allocation, valid until that function returns.
    CPU only."""
    if not isinstance(count, types.IntegerLiteral) or not isinstance(dtype, types.NumberClass):
        return None
    array_type = types.Array(dtype.instance_type, 1, "C")

    def codegen(context, builder, signature, args):
        from numba.np.arrayobj import populate_array

        element = context.get_data_type(array_type.dtype)
        # In the entry block (alloca_once): one frame slot, however often the call runs.
        data = cgutils.alloca_once(builder, element, size=count.literal_value)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(element))
        array = context.make_array(array_type)(context, builder)
        shape = (context.get_constant(types.intp, count.literal_value),)
        populate_array(array, data=data, shape=shape, strides=(itemsize,), itemsize=itemsize, meminfo=None)
        return array._getvalue()

    return array_type(count, dtype), codegen


# Streaming (non-temporal) stores, CPU only. An ordinary store first reads the destination's
# cache line from memory (read for ownership); a streaming store writes whole lines through
# write-combining buffers without reading them, and keeps the output from evicting what the
# kernel still reads: on a large output up to ~2.5x faster. They only pay when every byte of a
# line is written by them (a line that mixes them with ordinary stores is read after all), so a
# kernel streams all of its stores or none; stream_fence() must follow a task's streaming
# stores, which are weakly ordered.


def _nontemporal(builder, store) -> None:
    store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


@intrinsic
def stream_store(typingctx, dst, d, value):
    """dst[d] = value with a streaming store (4- and 8-byte numbers; dst[d] aligned to its size),
    an ordinary store for other elements (so that one code path serves every dtype). CPU only."""

    def codegen(context, builder, signature, args):
        dtype = signature.args[0].dtype
        if not (isinstance(dtype, (types.Integer, types.Float)) and dtype.bitwidth in (32, 64)):
            value = context.cast(builder, args[2], signature.args[2], dtype)
            pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], context.get_data_type(dtype))
            builder.store(context.get_value_as_data(builder, dtype, value), pointer)
            return context.get_dummy_value()
        # Stored as an integer of its bits: x86 streams a scalar only from an integer register
        # (MOVNTI); a float store would be an ordinary one, flushing the line being streamed.
        bits = ir.IntType(dtype.bitwidth)
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], bits)
        value = builder.bitcast(context.cast(builder, args[2], signature.args[2], signature.args[0].dtype), bits)
        _nontemporal(builder, builder.store(value, pointer, align=bits.width // 8))
        return context.get_dummy_value()

    return types.none(dst, types.intp, value), codegen


@intrinsic
def stream_copy_vector(typingctx, dst, d, src, s):
    """VECTOR_BYTES bytes from src[s] on (any alignment) to dst[d] on (aligned to VECTOR_BYTES), streaming. CPU only."""

    def codegen(context, builder, signature, args):
        vector = ir.VectorType(ir.IntType(64), VECTOR_BYTES // 8)
        source = _element_pointer(context, builder, signature.args[2], args[2], args[3], vector)
        target = _element_pointer(context, builder, signature.args[0], args[0], args[1], vector)
        _nontemporal(builder, builder.store(builder.load(source, align=1), target, align=VECTOR_BYTES))
        return context.get_dummy_value()

    return types.none(dst, types.intp, src, types.intp), codegen


@intrinsic
def stream_fill_vector(typingctx, dst, d, value):
    """VECTOR_BYTES bytes of copies of value (dst's element type) to dst[d] on (aligned to VECTOR_BYTES), streaming. CPU only."""

    def codegen(context, builder, signature, args):
        element_type = signature.args[0].dtype
        element = context.get_value_type(element_type)
        lanes = VECTOR_BYTES * 8 // element_type.bitwidth
        value = context.cast(builder, args[2], signature.args[2], element_type)
        splat = cgutils.get_null_value(ir.VectorType(element, lanes))
        for lane in range(lanes):
            splat = builder.insert_element(splat, value, ir.Constant(ir.IntType(32), lane))
        target = _element_pointer(context, builder, signature.args[0], args[0], args[1], splat.type)
        _nontemporal(builder, builder.store(splat, target, align=VECTOR_BYTES))
        return context.get_dummy_value()

    return types.none(dst, types.intp, value), codegen


@intrinsic
def stream_fence(typingctx):
    """Order this thread's streaming stores before everything after (a full fence). CPU only."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


def _reassociable(name: str, doc: str):
    """An intrinsic of two numbers (in the wider type): integers (and bools) as they are, wrapping,
    floats with LLVM's f<name> marked reassociable, so that a loop taking it into one variable is a
    reduction LLVM vectorizes (several partial results), which it never does for the plain
    instruction."""

    @intrinsic
    def call(typingctx, a, b):
        common = typingctx.unify_types(types.unliteral(a), types.unliteral(b))
        if not isinstance(common, (types.Float, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            a, b = (context.cast(builder, v, t, common) for v, t in zip(args, signature.args))
            if isinstance(common, types.Integer):
                return getattr(builder, name)(a, b)
            return getattr(builder, f"f{name}")(a, b, flags=("reassoc", "nsz"))

        return common(a, b), codegen

    call.__doc__ = doc
    return call


add_reassociable = _reassociable("add", "a + b, floats marked reassociable (a sum in one variable vectorizes).")
mul_reassociable = _reassociable("mul", "a * b, floats marked reassociable (a product in one variable vectorizes).")


def _float_pair(name: str, doc: str, flags: tuple[str, ...] = ()):
    """An intrinsic of two floats (in the wider type) calling llvm.<name>.f32/.f64 with LLVM's
    fast-math flags: a loop taking it into one variable is a reduction LLVM vectorizes."""

    @intrinsic
    def call(typingctx, a, b):
        common = typingctx.unify_types(types.unliteral(a), types.unliteral(b))
        if not isinstance(common, types.Float):
            return None

        def codegen(context, builder, signature, args):
            a, b = (context.cast(builder, v, t, common) for v, t in zip(args, signature.args))
            fn = builder.module.declare_intrinsic(f"llvm.{name}", [a.type], ir.FunctionType(a.type, [a.type, a.type]))
            return builder.call(fn, [a, b], fastmath=flags)

        return common(a, b), codegen

    call.__doc__ = doc
    return call


maximum = _float_pair("maximum", "The larger of two floats, NaN if either is, +0.0 over -0.0 (IEEE 754's maximum). CPU only.")
minimum = _float_pair("minimum", "The smaller of two floats, NaN if either is, -0.0 under +0.0 (IEEE 754's minimum). CPU only.")
# One vmaxps or vminps a vector, where maximum and minimum take six instructions (AVX-512): a max of
# 1 MiB of float32 on one core of an AMD EPYC took 9.4 us, not 22.7, with the check Reduce makes of
# each block (ep.common.math.reduce). nnan makes the result poison where an operand is NaN.
max_quick = _float_pair(
    "maxnum", "The larger of two floats that are not NaN, either zero of two (nnan nsz). CPU only.", ("nnan", "nsz")
)
min_quick = _float_pair(
    "minnum", "The smaller of two floats that are not NaN, either zero of two (nnan nsz). CPU only.", ("nnan", "nsz")
)
max_number = _float_pair(
    "maxnum", "The larger of two floats, the other where one is NaN (llvm.maxnum: C fmax, PTX max.f32)."
)
