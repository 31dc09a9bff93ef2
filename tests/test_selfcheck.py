"""python -m ep check says what it skipped and why, and counts it apart from what passed."""
from ep import selfcheck


def test_a_skipped_check_is_said_and_counted(monkeypatch, capsys):
    def skipped(device):
        raise selfcheck.Skipped("nothing of ep's runs here")

    def passed(device):
        pass

    monkeypatch.setattr(selfcheck, "CHECKS", [("Skips", skipped), ("Passes", passed)])
    assert selfcheck.run_self_check("cpu") == 0
    out = capsys.readouterr().out
    assert "check cpu  Skips" in out and "skipped (nothing of ep's runs here)" in out
    assert "self-check: 1 passed, 0 failed, 1 skipped" in out
