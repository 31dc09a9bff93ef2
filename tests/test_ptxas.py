"""The generated-code check (ep/cuda/ptxas.py): its occupancy arithmetic, its reading of ptxas and
PTX, and real kernels assembled.

tests/test_ptx.py runs the check on every kernel (`python -m ep.cuda.ptx --ptxas`, each PTX
compiled once for both); this file proves the check finds what it looks for.
"""

import pytest
from nvvm import run_without_simulator

ptxas = pytest.importorskip("ep.cuda.ptxas")

# NVIDIA's occupancy calculator at 256 threads per block, no shared memory: resident warps of 64.
CALCULATOR = [(16, 1.0), (32, 1.0), (33, 0.75), (40, 0.75), (48, 0.625), (64, 0.5), (128, 0.25), (255, 0.125)]


@pytest.mark.parametrize("cc", sorted(ptxas.LIMITS))
@pytest.mark.parametrize("registers, expected", CALCULATOR)
def test_occupancy_by_registers_matches_the_calculator(cc, registers, expected):
    assert ptxas.occupancy(registers, 256, 0, cc) == expected


def test_occupancy_by_shared_memory_and_block_size():
    # 48 KiB + the 1 KiB reserved per block: 3 blocks fit sm_80's 164 KiB, 4 fit sm_90's 228 KiB.
    assert ptxas.occupancy(32, 256, 48 * 1024, (8, 0)) == 3 * 8 / 64
    assert ptxas.occupancy(32, 256, 48 * 1024, (9, 0)) == 4 * 8 / 64
    # 64-thread blocks: at most 32 blocks per SM, i.e. 64 warps.
    assert ptxas.occupancy(32, 64, 0, (9, 0)) == 1.0
    # 96 threads are 3 warps: 21 blocks, 63 warps.
    assert ptxas.occupancy(32, 96, 0, (9, 0)) == 63 / 64


LOG = """ptxas info    : 8 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
ptxas info    : Function properties for _Z1kPf
    24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 512 bytes smem
"""


def test_ptxas_report_is_read():
    assert ptxas.parse_resources(LOG) == ptxas.Resources(registers=32, spill_stores=20, spill_loads=16, stack=24, shared=512)
    with pytest.raises(ValueError, match="no register count"):
        ptxas.parse_resources("ptxas info    : 8 bytes gmem")


PLAIN = ptxas.Traits(float64_data=False, index32=False, wide_loads=0, wide_stores=0)

LOOP = """
.visible .entry k(
.param .u64 p
)
{
    .reg .f64 %fd<2>;
    div.s64 %rd1, %rd2, %rd3;
$L__BB0_1:
    ld.global.u32 %r1, [%rd4];
    {body}
    @%p1 bra $L__BB0_1;
    ret;
}
"""


def _findings(body: str, traits: ptxas.Traits) -> list[str]:
    return ptxas.code_findings("k", LOOP.replace("{body}", body), traits)


def test_float64_instructions_are_found_unless_the_kernel_has_float64_data():
    body = "cvt.f64.f32 %fd1, %f1;\n    mul.rn.f64 %fd1, %fd1, %fd1;"
    assert "2 f64 instructions" in _findings(body, PLAIN)[0]
    assert _findings(body, ptxas.Traits(float64_data=True, index32=False, wide_loads=0, wide_stores=0)) == []
    # Declarations of f64 registers are not instructions.
    assert _findings("add.f32 %f1, %f1, %f2;", PLAIN) == []


def test_64_bit_division_is_found_inside_loops_of_32_bit_index_kernels_only():
    index32 = ptxas.Traits(float64_data=False, index32=True, wide_loads=0, wide_stores=0)
    assert "64-bit div/rem" in _findings("rem.u64 %rd5, %rd6, %rd7;", index32)[0]
    # The div.s64 before the loop's label runs once per thread: no finding.
    assert _findings("mul.hi.u32 %r2, %r1, %r3;", index32) == []
    assert _findings("rem.u64 %rd5, %rd6, %rd7;", PLAIN) == []


def test_16_byte_units_need_128_bit_loads_and_stores():
    wide16 = ptxas.Traits(float64_data=False, index32=False, wide_loads=1, wide_stores=1)
    assert _findings("ld.global.u64 %rd5, [%rd6];\n    st.global.u64 [%rd7], %rd5;", wide16)
    assert _findings("ld.global.v2.u64 {%rd5, %rd8}, [%rd6];\n    st.global.u64 [%rd7], %rd5;", wide16)
    assert _findings("ld.global.nc.v2.u64 {%rd5, %rd8}, [%rd6];\n    st.global.v2.u64 [%rd7], {%rd5, %rd8};", wide16) == []


def test_16_byte_packs_need_a_128_bit_load_per_input_read_and_a_128_bit_store():
    # A binary kernel with 16-byte packs on both operands and dst; each input it reads also has an
    # element load (its single-element work items): the loop's ld.global.u32 and `element`.
    binary = ptxas.Traits(float64_data=False, index32=False, wide_loads=2, wide_stores=1)
    load = "ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];"
    element = "ld.global.u32 %r5, [%rd2];"
    store = "st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};"
    assert "1 of 2 loads" in _findings(f"{load}\n    {element}\n    {store}", binary)[0]
    assert "0 of 1 stores" in _findings(f"{load}\n    {load}\n    {element}\n    st.global.v2.u32 [%rd3], {{%r1, %r2}};", binary)[0]
    assert _findings(f"{load}\n    ld.global.v2.u64 {{%rd4, %rd5}}, [%rd2];\n    {element}\n    {store}", binary) == []
    # An input the formula never reads (identity_backward's x) has no element load either.
    assert _findings(f"{load}\n    {store}", binary) == []
    # A kernel whose formula reads nothing (is_nan of an integer) loads nothing: only its store is checked.
    unary = ptxas.Traits(float64_data=False, index32=False, wide_loads=1, wide_stores=1)
    assert ptxas.code_findings("k", store, unary) == []
    assert "0 of 1 stores" in ptxas.code_findings("k", "st.global.v2.u32 [%rd3], {%r1, %r2};", unary)[0]


SCRIPT = """
import re
from ep.cuda import ptx, ptxas
wanted = {names!r}
for family, kernel in ptx.kernels():
    if kernel.name in wanted:
        for cc in ptx.CAPABILITIES:
            code = kernel.ptx(cc)
            row = ptxas.check(family.removesuffix("Factory"), kernel, code, cc)
            conversions = sorted(set(re.findall(r"cvt(?:\\.rn)?\\.f(?:16\\.f32|32\\.f16)", code)))
            print(kernel.name, cc, row.resources.registers, row.occupancy, row.findings, conversions, ptxas.traits(kernel))
            # The same PTX with its 128-bit accesses' opcodes narrowed (v4.32 to v2, v2.64 to one): the check must flag it.
            narrowed = re.sub(r"\\.v2\\.(\\w)64\\b", r".\\g<1>64", re.sub(r"\\.v4\\.(\\w)32\\b", r".v2.\\g<1>32", code))
            print("narrowed", kernel.name, ptxas.code_findings(kernel.name, narrowed, ptxas.traits(kernel)))
"""
KERNELS = [
    "unary_cast_float16_float32",
    "unary_cast_float32_float16",
    "batch_gather_int32_u16_i32",
    "strided_copy_u128_i32",
    "binary_add_float16_float16",
]


@pytest.mark.ptx
def test_real_kernels_assemble_clean_with_hardware_float16_conversion():
    stdout = run_without_simulator(["-c", SCRIPT.format(names=KERNELS)], timeout=1200)
    lines = [line for line in stdout.splitlines() if not line.startswith("narrowed ")]
    narrowed = [line for line in stdout.splitlines() if line.startswith("narrowed ")]
    assert len(lines) == 2 * len(KERNELS), stdout
    # Every kernel here moves 16-byte units or packs: narrowed, each is flagged.
    assert len(narrowed) == 2 * len(KERNELS) and all("without 128-bit loads and stores" in line for line in narrowed), stdout
    for line in lines:
        # Registers reported, full occupancy, no finding.
        name, rest = line.split(" ", 1)
        assert " 1.0 [] " in rest, line
    by_name = {line.split(" ", 1)[0]: line for line in lines}
    assert "'cvt.f32.f16'" in by_name["unary_cast_float16_float32"]
    assert "'cvt.rn.f16.f32'" in by_name["unary_cast_float32_float16"]
    # The traits the check reads from a kernel's bindings.
    assert "index32=True, wide_loads=1, wide_stores=1" in by_name["batch_gather_int32_u16_i32"]
    # 32-bit-index copy and binary kernels: checked for 64-bit div/rem in their loops. Packs of
    # 8 float16: 16 bytes in each operand and in dst; of 4 float32 to float16: 16 bytes loaded, 8 stored.
    assert "index32=True, wide_loads=1, wide_stores=1" in by_name["strided_copy_u128_i32"]
    assert "index32=True, wide_loads=2, wide_stores=1" in by_name["binary_add_float16_float16"]
    assert "index32=False, wide_loads=1, wide_stores=0" in by_name["unary_cast_float32_float16"]
