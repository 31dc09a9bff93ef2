"""The op records: one per op, in its family module, and the tables collected from them."""
import types

import pytest

import ep
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.ops import FAMILIES
from ep.common.math.ops.record import FLOAT, BinaryFunctor, UnaryFunctor, backward_op, collect, derivative
from ep.common.math.unary_functor import UNARY_FUNCTORS


def _module_records():
    return [(module, value) for module in FAMILIES for value in vars(module).values()
            if isinstance(value, (UnaryFunctor, BinaryFunctor))]


def test_every_op_has_one_record_and_the_tables_follow_the_enums():
    assert list(UNARY_FUNCTORS) == list(ep.UnaryOp)
    assert list(BINARY_FUNCTORS) == list(ep.BinaryOp)
    defined = [record.op for _, value in _module_records() for record in value.records()]
    assert len(defined) == len(set(defined)) == len(ep.UnaryOp) + len(ep.BinaryOp)


def test_every_backward_op_is_a_derivative_of_a_unary_record():
    derivatives = {d.op: unary.op for unary in UNARY_FUNCTORS.values() for d in unary.backward}
    backward = {op for op in ep.BinaryOp if "backward" in op.value}
    assert set(derivatives) == backward
    for op in backward:
        assert BINARY_FUNCTORS[op].dtypes == FLOAT and not BINARY_FUNCTORS[op].to_bool, op


def test_derivative_attrs_are_those_of_the_forward_op_or_a_prefix_of_them():
    for unary in UNARY_FUNCTORS.values():
        for d in unary.backward:
            assert d.attrs == unary.attrs[: len(d.attrs)], d.op


def test_collect_refuses_two_records_for_one_op():
    first = types.ModuleType("first")
    second = types.ModuleType("second")
    first.RELU = UNARY_FUNCTORS[ep.UnaryOp.kRelu]
    second.RELU = UnaryFunctor(ep.UnaryOp.kRelu, first.RELU.formula, FLOAT)
    with pytest.raises(ValueError, match="kRelu has two records; the second is in second"):
        collect(UnaryFunctor, ep.UnaryOp, (first, second))


def test_collect_takes_a_record_imported_by_two_modules_once_and_its_derivatives():
    first = types.ModuleType("first")
    second = types.ModuleType("second")
    first.RELU = second.RELU = UNARY_FUNCTORS[ep.UnaryOp.kRelu]
    assert list(collect(UnaryFunctor, ep.UnaryOp, (first, second))) == [ep.UnaryOp.kRelu]
    got = collect(BinaryFunctor, ep.BinaryOp, (first, second))
    assert list(got) == [ep.BinaryOp.kReluBackwardWithDyY, ep.BinaryOp.kReluBackwardWithDyX]


def test_derivative_is_a_float_binary_record():
    formula = BINARY_FUNCTORS[ep.BinaryOp.kEluBackwardWithDyX].formula
    record = derivative(ep.BinaryOp.kEluBackwardWithDyX, formula, ("alpha", 1.0))
    assert record == BINARY_FUNCTORS[ep.BinaryOp.kEluBackwardWithDyX]


def test_backward_op_is_oneflows_name_for_the_derivative_whatever_the_letter_case():
    assert backward_op(ep.UnaryOp.kRelu, "y") is ep.BinaryOp.kReluBackwardWithDyY
    assert backward_op(ep.UnaryOp.kHardSwish, "x") is ep.BinaryOp.kHardswishBackwardWithDyX
    assert backward_op(ep.UnaryOp.kSquareReLU, "x") is ep.BinaryOp.kSquareReLUBackwardWithDyX
    with pytest.raises(ValueError, match="kSign.*no derivative op given x: BinaryOp has no kSignBackwardWithDyX"):
        backward_op(ep.UnaryOp.kSign, "x")


def test_a_unary_record_makes_its_derivatives_records_with_its_attrs():
    formula = BINARY_FUNCTORS[ep.BinaryOp.kEluBackwardWithDyX].formula
    ops = [d.op for d in UnaryFunctor(ep.UnaryOp.kRelu, formula, FLOAT, with_dy_x=formula, with_dy_y=formula).backward]
    assert ops == [ep.BinaryOp.kReluBackwardWithDyY, ep.BinaryOp.kReluBackwardWithDyX]
    elu = UnaryFunctor(ep.UnaryOp.kElu, formula, FLOAT, (("alpha", 1.0),), with_dy_x=formula)
    assert elu.backward == (derivative(ep.BinaryOp.kEluBackwardWithDyX, formula, ("alpha", 1.0)),)
    none = UnaryFunctor(ep.UnaryOp.kElu, formula, FLOAT, (("alpha", 1.0),), with_dy_x=formula, backward_attrs=0)
    assert none.backward == (derivative(ep.BinaryOp.kEluBackwardWithDyX, formula),)
