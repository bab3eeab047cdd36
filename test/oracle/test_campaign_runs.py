"""Campaign runs: every dispersed parameter kind reaches the model the run simulated (a spy on
vm.simulate sees what the run passed it), seeds reproduce runs bit for bit, replay writes
vm-sim's outputs with the campaign's metrics."""
import json
import math

import numpy as np
import pytest

import vm_dynamics.sim.simulate as simulate_module
from vm_dynamics.campaign import make_spec, rerun, run_campaign
from vm_dynamics.config.scenario import load_scenario
from vm_dynamics.core import lie

SHORT = {"duration": 0.2}


def uniform(lo, hi):
    return {"dist": "uniform", "low": lo, "high": hi}


@pytest.fixture
def spy(monkeypatch):
    """The arguments of every vm.simulate call the campaign makes."""
    calls = []
    real = simulate_module.simulate

    def wrapper(model, g0, V0, q0, qd0, *args, **kwargs):
        calls.append(dict(model=model, g0=g0, V0=V0, q0=q0, qd0=qd0, kwargs=kwargs))
        return real(model, g0, V0, q0, qd0, *args, **kwargs)
    monkeypatch.setattr(simulate_module, "simulate", wrapper)
    return calls


def one_run(scenario, dispersions, k=0, overrides=SHORT, **kw):
    spec = make_spec(scenario, {"seed": 11, "dispersions": dispersions}, overrides, **kw)
    return spec, rerun(spec, k)


def body_inertia(model, k):
    """(mass, CoM, rotational inertia about the CoM) of body k in the vehicle frame at home."""
    M = model.vehicle_inertia - (model.added_vehicle_inertia if model.added_vehicle_inertia
                                 is not None else 0) if k == 0 else model.body_inertia_home[k - 1]
    m = M[0, 0]
    c = lie.unskew(M[3:, :3]) / m
    return m, c, M[3:, 3:] + m * lie.skew(c) @ lie.skew(c)


@pytest.fixture(scope="module")
def arm():
    return load_scenario("spacecraft_arm", SHORT)


def test_mass_dispersion_reaches_the_plant(spy, arm):
    link = arm.model.link_names[3]
    _, r = one_run("spacecraft_arm", {"mass": {link: uniform(1.2, 1.3)}})
    plant = spy[-1]["model"]
    f = r.values[f"mass.{link}"]
    assert 1.2 <= f <= 1.3
    assert plant.mass[3] == pytest.approx(arm.model.mass[3] * f, rel=1e-12)
    m, c, I = body_inertia(plant, 3)
    m0, c0, I0 = body_inertia(arm.model, 3)
    assert m == pytest.approx(m0 * f, rel=1e-12)
    np.testing.assert_allclose(c, c0, atol=1e-12)              # the CoM stays
    np.testing.assert_allclose(I, I0 * f, rtol=1e-10, atol=1e-14)   # denser, same shape
    assert plant.total_mass == pytest.approx(arm.model.total_mass + (f - 1) * m0, rel=1e-12)
    assert np.array_equal(plant.mass[:3], arm.model.mass[:3])


def test_com_dispersion_reaches_the_plant(spy, arm):
    _, r = one_run("spacecraft_arm", {"com": {"vehicle": {"dist": "normal", "mean": 0.0,
                                                          "std": 0.02}}})
    plant = spy[-1]["model"]
    offset = np.array([r.values[f"com.{arm.model.vehicle_link}.{a}"] for a in "xyz"])
    assert np.all(offset != 0)
    np.testing.assert_allclose(body_inertia(plant, 0)[1], body_inertia(arm.model, 0)[1] + offset,
                               atol=1e-12)
    np.testing.assert_allclose(plant.com_home[0], arm.model.com_home[0] + offset, atol=1e-12)
    _, _, I = body_inertia(plant, 0)         # the inertia about the CoM is unchanged
    np.testing.assert_allclose(I, body_inertia(arm.model, 0)[2], rtol=1e-10)


def second_moments(I):
    return np.linalg.eigvalsh(0.5 * np.trace(I) * np.eye(3) - I)


def test_inertia_dispersion_stays_physical(spy, arm):
    _, r = one_run("spacecraft_arm", {"inertia": {"*": {"dist": "lognormal", "sigma": 0.8}}})
    plant = spy[-1]["model"]
    changed = 0
    for k in range(len(plant.mass)):
        if plant.mass[k] <= 0:
            continue
        _, _, I = body_inertia(plant, k)
        w = np.linalg.eigvalsh(0.5 * (I + I.T))
        assert w[0] > 0 and w[0] + w[1] >= w[2] * (1 - 1e-12)     # triangle inequality
        s0, s = second_moments(body_inertia(arm.model, k)[2]), second_moments(I)
        name = plant.link_names[k]
        factors = sorted(r.values[f"inertia.{name}.s{i}"] for i in (1, 2, 3))
        changed += not np.allclose(s, s0)
        # Σ's principal values are the nominal ones times the drawn factors
        assert np.prod(s) == pytest.approx(np.prod(s0) * np.prod(factors), rel=1e-8)
    assert changed >= 3


def test_hydrodynamic_dispersion_reaches_the_plant(spy):
    nominal = load_scenario("uvms", SHORT)
    _, r = one_run("uvms", {"hydrodynamics": {"linear_damping": uniform(0.5, 1.5),
                                              "added_mass": uniform(0.5, 1.5)}})
    call = spy[-1]
    f = np.array([r.values[f"hydrodynamics.linear_damping.{i}"] for i in range(6)])
    fa = np.array([r.values[f"hydrodynamics.added_mass.{i}"] for i in range(6)])
    vehicle = [e for e in call["kwargs"]["forces"] if e.kind == "hydrodynamics"
               or hasattr(e, "params")][0]
    np.testing.assert_allclose(vehicle.params.linear_damping,
                               nominal.hydrodynamics.linear_damping * f, rtol=1e-12)
    added = nominal.hydrodynamics.added_mass * np.sqrt(np.outer(fa, fa))
    np.testing.assert_allclose(call["model"].vehicle_inertia - added,
                               nominal.model.vehicle_inertia - nominal.hydrodynamics.added_mass,
                               atol=1e-9)
    assert np.linalg.eigvalsh(added)[0] >= -1e-9


def test_initial_tumble_reaches_the_run(spy, arm):
    _, r = one_run("spacecraft_arm", {"initial": {"tumble": {"dist": "normal", "mean": 0.0,
                                                             "std": 0.05}}})
    w = np.array([r.values[f"initial.tumble.{a}"] for a in "xyz"])
    np.testing.assert_array_equal(spy[-1]["V0"][3:], arm.V0[3:] + w)
    assert r.metrics["attitude_max_deg"] > 0


def test_controller_gain_dispersion_reaches_the_law(monkeypatch, arm):
    from vm_dynamics.control.inputs import ControllerInputs
    laws = []
    real = ControllerInputs.compiled_law

    def spy_law(self):
        law = real(self)
        laws.append(law)
        return law
    monkeypatch.setattr(ControllerInputs, "compiled_law", spy_law)
    _, r = one_run("spacecraft_arm", {"controller": {"kp": uniform(0.5, 2.0)}})
    assert r.compiled_law == "computed_torque"
    factor = r.values["controller.kp"]
    assert 0.5 <= factor <= 2.0
    np.testing.assert_allclose(laws[-1].law.kp, arm.controller["kp"] * factor, rtol=1e-12)


def test_sensor_noise_reaches_the_controller(arm):
    _, quiet = one_run("spacecraft_arm", {"initial": {"tumble": uniform(0.0, 0.01)}})
    _, noisy = one_run("spacecraft_arm", {"initial": {"tumble": uniform(0.0, 0.01)},
                                          "sensor_noise": {"joint_positions": 1e-3}})
    assert noisy.compiled_law is None            # the Python path: noise is added per stage
    assert noisy.values["initial.tumble.x"] == quiet.values["initial.tumble.x"]
    assert noisy.metrics["tau_peak"] != quiet.metrics["tau_peak"]


def same(a: dict, b: dict) -> bool:
    """Bit-for-bit equality of two metric dicts (NaN equal to NaN)."""
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, float) and isinstance(y, float):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif x != y:
            return False
    return True


DISP = {"mass": {"*": uniform(0.9, 1.1)}, "inertia": {"*": uniform(0.9, 1.1)},
        "initial": {"tumble": {"dist": "normal", "mean": 0.0, "std": 0.02}},
        "controller": {"kp": uniform(0.8, 1.2)}}


def test_seed_reproduces_a_run_bit_exactly():
    spec = make_spec("spacecraft_arm", {"seed": 5, "dispersions": DISP}, SHORT)
    result = run_campaign(None, spec=spec, runs=3, backend="serial")
    again = rerun(spec, 2)
    assert again.values == result.results[2].values
    assert same(again.metrics, result.results[2].metrics)
    assert np.isfinite(again.metrics["tracking_error_rms"])
    other = rerun(make_spec("spacecraft_arm", {"seed": 6, "dispersions": DISP}, SHORT), 2)
    assert other.values != again.values
    assert result.results[0].values != result.results[1].values


def test_campaign_counts_untrusted_and_failures(tmp_path):
    # a step 100 times too long for a fast tumble: the energy balance flags the runs
    spec = make_spec("spacecraft_arm", {"seed": 1, "success": "tracking_error_final < 1e-9",
                                        "dispersions": DISP}, {"duration": 0.2})
    result = run_campaign(None, spec=spec, runs=4, backend="serial", keep_worst=1)
    s = result.summary()
    assert sum(s["counts"].values()) == 4
    assert s["counts"]["pass"] == 0                       # the predicate fails every run
    assert s["failure_probability"]["estimate"] == 1.0
    assert list(result.trajectories) == [result.worst(1)[0].k]
    from vm_dynamics.campaign.report import write_report
    files = write_report(result, tmp_path)
    data = json.loads(files["json"].read_text())
    assert len(data["runs"]) == 4 and (tmp_path / "histograms.png").is_file()
    assert "Wilson interval" in files["markdown"].read_text()


def test_untrusted_integration_is_not_a_pass():
    # lie_euler at 50 ms on a tumbling bus: the energy balance is off by a few percent, more
    # than the scenario's divergence_threshold of 1 %: the run is flagged, not passed
    coarse = {"dt": 0.05, "duration": 1.0, "integrator": "lie_euler",
              "divergence_threshold": 0.01}
    doc = {"seed": 2, "dispersions": {"initial": {"tumble": uniform(3.0, 4.0)}}}
    r = rerun(make_spec("spacecraft_arm", doc, coarse), 0)
    assert not r.metrics["diverged"]
    assert r.metrics["energy_balance_rel"] > 0.01
    assert r.outcome == "untrusted" and not r.metrics["trusted"]
    fine = rerun(make_spec("spacecraft_arm", doc, dict(coarse, dt=0.001, integrator="rkmk4")), 0)
    assert fine.values == r.values
    assert fine.metrics["trusted"] and fine.outcome == "pass"


def test_plugin_without_compiled_law_runs_on_the_python_path_and_the_report_says_so():
    spec = make_spec("spacecraft_arm", {"seed": 3, "dispersions": DISP}, SHORT,
                     controller="pd_gravity")
    result = run_campaign(None, spec=spec, runs=2, backend="serial")
    assert [r.compiled_law for r in result.results] == [None, None]
    assert all(np.isfinite(r.metrics["tau_peak"]) for r in result.results)
    s = result.summary()
    assert s["controller"] == {"name": "pd_gravity", "paths": ["python"], "python_path_runs": 2}
    from vm_dynamics.campaign.report import markdown
    assert "2 runs on the Python path: no compiled law" in markdown(result)


def test_progress_bar_counts_runs_with_rate(capsys):
    spec = make_spec("spacecraft_arm", {"seed": 4, "dispersions": DISP}, {"duration": 0.05})
    run_campaign(None, spec=spec, runs=2, backend="serial", progress=True)
    err = capsys.readouterr().err
    assert "campaign" in err and "2/2" in err
    assert "run/s" in err or "s/run" in err           # the rate (tqdm inverts it when slow)


def test_potential_energy_without_gravity_skips_the_kinematics(monkeypatch, arm):
    """The energy check of every campaign run evaluates U at every kept sample: without
    gravity it is exactly zero, computed without the kinematics (half a run's CPU time)."""
    from vm_dynamics.dynamics import lp

    def no_kinematics(*args, **kwargs):
        raise AssertionError("kinematics computed for a zero potential")
    monkeypatch.setattr(lp, "kinematics", no_kinematics)
    assert arm.model.potential_energy(arm.g0, arm.q0) == 0.0
    with pytest.raises(ValueError, match="q"):
        arm.model.potential_energy(arm.g0, np.full(arm.model.n, np.nan))   # still checked
