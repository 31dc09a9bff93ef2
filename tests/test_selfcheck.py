"""python -m ep check: every registered primitive checked by its samples; what it skipped is said
and counted apart from what passed."""
import pytest

import ep
from ep import selfcheck
from ep.testing.samples import registered


def test_a_skipped_check_is_said_and_counted(monkeypatch, capsys):
    def check(device, factory_type):
        if factory_type is ep.FillFactory:
            raise selfcheck.Skipped("nothing of ep's runs here")
        return "float32"

    monkeypatch.setattr(selfcheck, "check_primitive", check)
    assert selfcheck.run_self_check("cpu") == 0
    out = capsys.readouterr().out
    assert "check cpu  Fill" in out and "skipped (nothing of ep's runs here)" in out
    assert f"self-check: {len(registered('cpu')) - 1} passed, 0 failed, 1 skipped" in out


def test_a_failed_check_fails_the_run(monkeypatch, capsys):
    def check(device, factory_type):
        assert factory_type is not ep.CastFactory, "cast gave 3"
        return "float32"

    monkeypatch.setattr(selfcheck, "check_primitive", check)
    assert selfcheck.run_self_check("cpu") == 1
    out = capsys.readouterr().out
    assert "check cpu  Cast" in out and "FAILED: AssertionError: cast gave 3" in out


@pytest.mark.parametrize("name", sorted(registered("cpu")))
def test_every_primitive_checks(device, name):
    factory_type, _ = registered(device)[name]
    try:
        combination = selfcheck.check_primitive(device, factory_type)
    except selfcheck.Skipped as reason:
        pytest.fail(f"{name} on {device}: {reason}")
    assert combination
