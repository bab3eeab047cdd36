"""The first-run compile notice is printed once per process, however many kernels a run
compiles (before: the engine's warm-up printed it and the compiled control law's rollout
printed it again, so a first ``vm-sim`` run showed it twice)."""
import pytest

from vm_dynamics.dynamics.fast import backend

pytestmark = pytest.mark.skipif(not backend.numba_available(), reason="needs numba")


def test_a_first_run_says_it_compiles_once(monkeypatch, capsys, tmp_path):
    from vm_dynamics.app.cli import main
    monkeypatch.setattr(backend, "NOTICE_PRINTED", [])
    monkeypatch.setattr(backend, "kernels_cached", lambda *d: False)   # as on a first run
    rc = main(["spacecraft_arm", "--duration", "0.02", "--no-plots", "--quiet",
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc in (0, None), err
    assert err.count(backend.COMPILE_NOTICE) == 1, err
