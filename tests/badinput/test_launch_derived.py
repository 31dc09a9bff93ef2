"""Bad arguments to the Launch of every primitive whose Spec is derived from its samples and
declaration (launch_specs.DERIVED): each buffer, count and the stream in turn gets a bad value of its kind."""
import pytest
from hypothesis import given, strategies as st

from guards import FAST
from launch_specs import check_bad_argument, family_params


@pytest.mark.parametrize("name, param", family_params("derived"))
@FAST
@given(data=st.data())
def test_bad_argument_is_named_and_changes_nothing(device, name, param, data):
    check_bad_argument(data, device, name, param)
