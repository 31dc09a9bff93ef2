"""ep.sbp's names, placements, the balanced splitter, signature lists and their errors, and the
seed's two worked examples (gather with its gather axis split; expand under S(3))."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import ep
from ep.include.primitive import BatchGatherFactory, NewPrimitive
from ep.ops.gather import gather_shape
from ep.sbp import Signature, broadcast, partial_sum, physical, signatures, split
from ep.testing import to_device, to_numpy

B, P = broadcast, partial_sum


def test_sbps_print_compare_and_hash_as_oneflows():
    assert [repr(split(0)), repr(split(3)), repr(B), repr(P)] == ["S(0)", "S(3)", "B", "P"]
    assert split(1) == split(1) and split(1) != split(2) and split(0) != B and B != P
    assert type(B)() == B and hash(type(P)()) == hash(P)
    assert len({split(0), split(0), B, B, P}) == 3
    with pytest.raises(ValueError, match="axis: -1 is negative"):
        split(-1)
    with pytest.raises(TypeError, match="axis"):
        split(1.5)
    with pytest.raises(AttributeError):
        split(0).axis = 1


def test_a_single_sbp_stands_for_a_1_tuple():
    assert ep.sbp.nd_sbp(split(0), 1) == (split(0),)
    assert ep.sbp.nd_sbp([B, P], 2) == (B, P)
    with pytest.raises(ValueError, match="expected 2, one per hierarchy axis"):
        ep.sbp.nd_sbp(split(0), 2)
    with pytest.raises(TypeError, match="not an SBP"):
        ep.sbp.nd_sbp("S(0)", 1)


def test_placements_1d_and_2d():
    p = ep.placement("cuda", ranks=[[0, 1], [2, 3]])
    assert p.hierarchy == (2, 2) and p.size == 4 and p.device_type is ep.DeviceType.kCUDA
    assert p.indices() == [(0, 0), (0, 1), (1, 0), (1, 1)] and p.rank((1, 0)) == 2
    assert p == ep.placement("cuda", [[0, 1], [2, 3]]) and hash(p) == hash(ep.placement("cuda", ((0, 1), (2, 3))))
    assert p != ep.placement("cpu", [[0, 1], [2, 3]])
    assert ep.placement("cpu", [3, 1, 2]).hierarchy == (3,)
    assert repr(p) == "placement(type='cuda', ranks=[[0, 1], [2, 3]])"


@pytest.mark.parametrize(
    "ranks, error, match",
    [
        ([], TypeError, "non-empty"),
        ([[0, 1], [2]], ValueError, "equal-length"),
        ([0, 0], ValueError, "names a rank twice"),
        ([0, -1], ValueError, r"ranks\[1\]: -1 is negative"),
        ("01", TypeError, "ranks"),
    ],
)
def test_bad_placements_name_the_ranks(ranks, error, match):
    with pytest.raises(error, match=match):
        ep.placement("cpu", ranks)


def test_bad_placement_device():
    with pytest.raises(ValueError, match="device"):
        ep.placement("tpu", [0, 1])


@pytest.mark.parametrize("size", range(0, 12))
@pytest.mark.parametrize("parts", [1, 2, 3, 4, 5])
def test_balanced_split_gives_the_first_size_mod_parts_one_more(size, parts):
    bounds = ep.sbp.balanced_split(size, parts)
    lengths = [stop - start for start, stop in bounds]
    assert lengths == [size // parts + (i < size % parts) for i in range(parts)]
    assert bounds[0][0] == 0 and bounds[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))


def test_nested_splits_split_the_piece_left_by_the_axes_before():
    # 7 over 2 is [0, 4) and [4, 7); [4, 7) over 2 is [4, 6) and [6, 7).
    box = ep.sbp.physical_slices((7, 3), (split(0), split(0)), (2, 2), (1, 1))
    assert box == (slice(6, 7), slice(0, 3))
    assert ep.sbp.physical_shape((7, 3), (split(0), split(1)), (2, 2), (1, 0)) == (3, 2)
    assert ep.sbp.physical_shape((7, 3), P, (4,), (3,)) == (7, 3)


def test_split_array_and_assemble_round_trip():
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, (5, 4)).astype(np.float32)
    for sbp in [(split(0), split(1)), (P, split(0)), (B, P), (split(1), split(1))]:
        pieces = ep.sbp.split_array(x, sbp, (2, 2), rng)
        assert set(pieces) == {(0, 0), (0, 1), (1, 0), (1, 1)}
        np.testing.assert_array_equal(ep.sbp.assemble(pieces, sbp, (2, 2)), x)
    with pytest.raises(ValueError, match="broadcast copy 1 differs"):
        ep.sbp.assemble({(0,): x, (1,): x + 1}, B, (2,))


def test_import_ep_stays_light():
    code = "import sys, ep; ep.sbp.split(0); ep.placement('cpu', [0, 1]); print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_gather_signatures_as_the_issue_lists_them():
    sigs = signatures("gather", params=(4, 5), indices=(3,), axis=1)
    assert Signature({"params": split(1), "indices": B}, {"out": P}) in sigs
    assert Signature({"params": B, "indices": split(0)}, {"out": split(1)}) in sigs
    assert Signature({"params": split(0), "indices": B}, {"out": split(0)}) in sigs
    assert len(set(sigs)) == len(sigs) == 5


def test_batch_gather_has_the_signature_oneflow_lacks():
    # indices broadcast, params split on the gather axis: each rank gathers its rows, the output a partial sum.
    sigs = signatures("batch_gather", params=(4, 5, 6), indices=(4, 3))
    assert Signature({"params": split(1), "indices": B}, {"out": P}) in sigs


def test_unary_and_binary_partial_sums():
    assert Signature({"x": P}, {"out": P}) in signatures("unary", op="negative", x=(4, 5))
    assert Signature({"x": P}, {"out": P}) not in signatures("unary", op="relu", x=(4, 5))
    pp = Signature({"a": P, "b": P}, {"out": P})
    pb = Signature({"a": P, "b": B}, {"out": P})
    assert pp in signatures("binary", op="sub", a=(4, 5), b=(5,))
    assert pb in signatures("binary", op="div", a=(4, 5), b=(5,))
    assert pb not in signatures("binary", op="div", a=(4, 5), b=(5,), dtype="int32")
    assert not any(P in s.outputs.values() for s in signatures("binary", op="less_than", a=(4, 5), b=(5,)))
    # A dim where one side has size 1 broadcasts that side.
    assert Signature({"a": B, "b": split(0)}, {"out": split(1)}) in signatures("binary", op="add", a=(4, 1), b=(5,))


def test_bad_names_and_arguments_are_named():
    with pytest.raises(ValueError, match="name: 'conv' is not an op"):
        signatures("conv", x=(1,))
    with pytest.raises(TypeError, match="gather: .*indices"):
        signatures("gather", params=(4, 5))
    with pytest.raises(ValueError, match="axis: 2 is out of range"):
        signatures("gather", params=(4, 5), indices=(3,), axis=2)
    with pytest.raises(ValueError, match=r"sizes\[1\]: dim 1 has input size 3"):
        signatures("expand", x=(4, 3), sizes=(4, 2))
    with pytest.raises(TypeError, match=r"x\[0\]"):
        signatures("unary", op="relu", x=(4.5,))
    not_one = Signature({"x": P}, {"out": P})
    with pytest.raises(ValueError, match="is not a signature of unary"):
        physical("unary", not_one, (2,), (0,), op="relu", x=(4,))


def test_seed_example_gather_axis_split_gives_a_partial_sum(device):
    # params (4, 5) split on the gather axis 1 over two ranks: columns [0, 3) and [3, 5).
    rng = np.random.default_rng(0)
    params = rng.integers(-9, 9, (4, 5)).astype(np.float32)
    indices = np.array([4, 0, 3], np.int64)
    sig = Signature({"params": split(1), "indices": B}, {"out": P})
    total = np.zeros((4, 3), np.float32)
    for rank, (offset, width) in enumerate([(0, 3), (3, 2)]):
        piece = physical("gather", sig, (2,), (rank,), params=(4, 5), indices=(3,), axis=1)
        assert piece.shapes == {"params": (4, width), "indices": (3,), "out": (4, 3)}
        assert piece.attributes["offset"] == offset
        shape = gather_shape(piece.shapes["params"], indices.shape, 1)
        dev = ep.GetDevice(device)
        primitive = NewPrimitive(BatchGatherFactory, dev, ep.DataType.kFloat, ep.DataType.kInt64)
        out = to_device(np.zeros((4, 3), np.float32), device)
        primitive.Launch(
            dev.default_stream, to_device(indices, device), shape.num_indices,
            to_device(np.ascontiguousarray(params[:, offset:offset + width]), device),
            shape.batch, shape.outer, shape.gather, shape.inner, out, offset=offset,
        )
        total += to_numpy(out)
    np.testing.assert_array_equal(total, np.take(params, indices, axis=1))


def test_seed_example_expand_under_s3(device):
    # Logical input [4, 3, 1, 2] split on dim 3 over two ranks is [4, 3, 1, 1] on each; the logical
    # expand_size [2, 4, 3, 4, 2] becomes [2, 4, 3, 4, 1].
    x = np.random.default_rng(1).integers(-9, 9, (4, 3, 1, 2)).astype(np.int32)
    sig = Signature({"x": split(3)}, {"out": split(4)})
    assert sig in signatures("expand", x=x.shape, sizes=(2, 4, 3, 4, 2))
    outs = []
    for rank in range(2):
        piece = physical("expand", sig, ep.placement(device, [0, 1]), (rank,), x=x.shape, sizes=(2, 4, 3, 4, 2))
        assert piece.shapes["x"] == (4, 3, 1, 1) and piece.attributes == {"sizes": (2, 4, 3, 4, 1)}
        local = to_device(x[..., rank:rank + 1], device).reshape(piece.shapes["x"])
        outs.append(to_numpy(ep.ops.expand(local, piece.attributes["sizes"])))
    np.testing.assert_array_equal(np.concatenate(outs, axis=4), np.broadcast_to(x, (2, 4, 3, 4, 2)))


def test_repeat_under_split_repeats_each_ranks_share():
    # x (1, 3) repeated (4, 1): dim 0 (size 1, repeated 4 times) splits with x broadcast, 4 over 3 ranks.
    sig = Signature({"x": B}, {"out": split(0)})
    counts = [physical("repeat", sig, (3,), (r,), x=(1, 3), sizes=(4, 1)).attributes["sizes"] for r in range(3)]
    assert counts == [(2, 1), (1, 1), (1, 1)]


RULES_SCRIPT = """
import json, sys
import ep
# Before ep.ops is imported: the first lookup loads it, and every op in OPS has its rules there.
before = "ep.ops" in sys.modules
from ep.sbp.signature import OPS, rule
ruled = [name for name in OPS if rule(name).signatures is not None]
runs = [name for name in OPS if rule(name).run is not None]
print(json.dumps([before, ruled, runs, list(OPS)]))
"""


def test_every_op_of_OPS_has_its_rules_registered_by_ep_ops():
    result = subprocess.run([sys.executable, "-c", RULES_SCRIPT], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    before, ruled, runs, ops = json.loads(result.stdout.splitlines()[-1])
    assert not before and ruled == ops
    # Each op a rank runs on its pieces has its run; fuse's global call runs the fused callable itself.
    assert runs == [name for name in ops if name != "fuse"]
    with pytest.raises(ValueError, match="name: 'nope' is not an op with SBP signatures"):
        ep.sbp.signature.rule("nope")


def test_sbps_and_placements_pickle_and_copy_as_themselves():
    # Immutable by __setattr__, which pickle's and copy's slot restoring went through (mpi4py's
    # comm.bcast of an SBP raised AttributeError).
    import copy
    import pickle

    for value in (ep.sbp.split(1), ep.sbp.broadcast, ep.sbp.partial_sum, ep.placement("cpu", [0, 1]), ep.placement("cpu", [[0, 1], [2, 3]])):
        for again in (pickle.loads(pickle.dumps(value)), copy.deepcopy(value), copy.copy(value)):
            assert again == value and hash(again) == hash(value) and repr(again) == repr(value)
    assert pickle.loads(pickle.dumps(ep.sbp.broadcast)) is ep.sbp.broadcast
    assert pickle.loads(pickle.dumps(ep.sbp.partial_sum)) is ep.sbp.partial_sum
