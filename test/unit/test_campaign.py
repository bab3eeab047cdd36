"""Campaign pieces that need no simulation: distributions, dispersions files and their errors,
the success predicate, the Wilson interval against scipy's."""
import math

import numpy as np
import pytest

from vm_dynamics.campaign import Predicate, parse_dispersions, wilson_interval
from vm_dynamics.campaign.distributions import parse_distribution


@pytest.mark.parametrize("failures,n", [(0, 1), (0, 50), (1, 50), (7, 100), (50, 100),
                                        (99, 100), (100, 100), (3, 1000), (412, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_interval_matches_scipy(failures, n, confidence):
    from scipy.stats import binomtest
    ref = binomtest(failures, n).proportion_ci(confidence_level=confidence, method="wilson")
    lo, hi = wilson_interval(failures, n, confidence)
    assert lo == pytest.approx(ref.low, abs=1e-12)
    assert hi == pytest.approx(ref.high, abs=1e-12)


def test_wilson_interval_matches_the_textbook_formula():
    # Wilson (1927): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959963984540054
    z, x, n = 1.959963984540054, 13, 250
    p = x / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(x, n) == pytest.approx((c - h, c + h), abs=1e-14)


@pytest.mark.parametrize("spec", [
    {"dist": "normal", "mean": 1.0, "std": 0.1},
    {"dist": "uniform", "low": -2.0, "high": 3.0},
    {"dist": "truncated_normal", "mean": 1.0, "std": 0.5, "low": 0.8, "high": 1.1},
    {"dist": "lognormal", "median": 2.0, "sigma": 0.2},
])
def test_distributions_sample_their_law(spec):
    from scipy import stats
    d = parse_distribution(spec, "x")
    x = d.sample(np.random.default_rng(1), 20000)
    ref = {"normal": stats.norm(1.0, 0.1), "uniform": stats.uniform(-2.0, 5.0),
           "truncated_normal": stats.truncnorm(-0.4, 0.2, loc=1.0, scale=0.5),
           "lognormal": stats.lognorm(0.2, scale=2.0)}[spec["dist"]]
    assert stats.kstest(x, ref.cdf).pvalue > 1e-4
    lo, hi = d.support()
    assert np.all((x >= lo) & (x <= hi))


def test_same_generator_state_same_samples():
    d = parse_distribution({"dist": "truncated_normal", "mean": 0, "std": 1, "low": -1,
                            "high": 2}, "x")
    a = d.sample(np.random.default_rng(5), 7)
    b = d.sample(np.random.default_rng(5), 7)
    assert np.array_equal(a, b)


GOOD = {"seed": 3, "dispersions": {"mass": {"vehicle": {"dist": "uniform", "low": 0.9,
                                                         "high": 1.1}}}}


@pytest.mark.parametrize("doc,message", [
    ({"sed": 3}, "sed: unknown key (did you mean 'seed'?)"),
    ({"seed": -1}, "seed: expected an integer >= 0"),
    ({"seed": 1, "runs": 0}, "runs: expected an integer >= 1"),
    ({"seed": 1, "dispersions": {"masss": {}}},
     "dispersions.masss: unknown parameter kind (did you mean 'mass'?)"),
    ({"seed": 1, "dispersions": {"initial": {"tumbel": {"dist": "normal", "mean": 0,
                                                         "std": 1}}}},
     "dispersions.initial.tumbel: unknown parameter (did you mean 'tumble'?)"),
    ({"seed": 1, "dispersions": {"mass": {"vehicle": {"dist": "gauss", "mean": 1,
                                                       "std": 1}}}},
     "dispersions.mass.vehicle.dist: unknown distribution 'gauss'"),
    ({"seed": 1, "dispersions": {"mass": {"vehicle": {"dist": "uniform", "low": 0.9,
                                                       "hihg": 1.1}}}},
     "dispersions.mass.vehicle.hihg: unknown parameter of uniform (did you mean 'high'?)"),
    ({"seed": 1, "dispersions": {"mass": {"vehicle": {"dist": "normal", "mean": 1,
                                                       "std": -0.1}}}},
     "dispersions.mass.vehicle.std: must be >= 0"),
    ({"seed": 1, "dispersions": {"mass": {"vehicle": {"dist": "normal", "mean": 1,
                                                       "std": 0.1}}}},
     "dispersions.mass.vehicle: the mass factor must stay > 0"),
    ({"seed": 1, "dispersions": {"com": {"vehicle": {"dist": "uniform", "low": 1,
                                                      "high": 1}}}},
     "dispersions.com.vehicle.low: must be below high"),
    ({"seed": 1, "dispersions": {"hydrodynamics": {"linear_dampin": {
        "dist": "uniform", "low": 0.5, "high": 1.5}}}},
     "dispersions.hydrodynamics.linear_dampin: unknown parameter (did you mean "
     "'linear_damping'?)"),
    ({"seed": 1, "dispersions": {"sensor_noise": {"joint_positions": -1.0}}},
     "dispersions.sensor_noise.joint_positions: expected a noise standard deviation"),
    ({"seed": 1, "delay": 0.1}, "delay: vm.simulate has no input or measurement delay"),
    ({"seed": 1, "success": "tracking_eror_rms < 1"},
     "success: unknown metric 'tracking_eror_rms' (did you mean 'tracking_error_rms'?)"),
    ({"seed": 1, "success": "__import__('os')"}, "success: only abs, min, max, isnan() may"),
    ({"seed": 1, "success": "tracking_error_rms <"}, "success: invalid expression"),
])
def test_bad_dispersions_are_one_line_errors_naming_the_key(doc, message):
    with pytest.raises(ValueError) as info:
        parse_dispersions(doc)
    text = str(info.value)
    assert message in text
    assert "\n" not in text


def test_bad_file_error_names_the_file(tmp_path):
    from vm_dynamics.campaign import load_dispersions
    f = tmp_path / "d.yaml"
    f.write_text("seed: 1\ndispersions:\n  inertia:\n    vehicle: {dist: normal, mean: 1, "
                 "std: 0.1}\n")
    with pytest.raises(ValueError, match=r"d\.yaml: dispersions\.inertia\.vehicle: the inertia "
                                         r"factor must stay > 0"):
        load_dispersions(f)
    assert load_dispersions(_write(tmp_path, "seed: 4\nruns: 9\n")).runs == 9


def _write(tmp_path, text):
    f = tmp_path / "ok.yaml"
    f.write_text(text)
    return f


def test_run_generators_depend_only_on_seed_and_index():
    d = parse_dispersions(GOOD)
    spawned = np.random.SeedSequence(3).spawn(5)
    for k in (0, 4):
        a = d.rng(k).random(4)
        assert np.array_equal(a, np.random.default_rng(spawned[k]).random(4))
    assert not np.array_equal(d.rng(1).random(4), d.rng(2).random(4))


def test_predicate_expression_and_callable():
    m = {"tracking_error_rms": 0.01, "attitude_max_deg": 12.0, "diverged": False,
         "trusted": True}
    assert Predicate("tracking_error_rms < 0.02 and attitude_max_deg < 15")(m)
    assert not Predicate("max(tracking_error_rms, 0.5) < 0.1")(m)
    assert Predicate(lambda metrics: metrics["attitude_max_deg"] > 10)(m)
    assert Predicate(None)(m)
    with pytest.raises(ValueError, match="success: expected an expression or a callable"):
        Predicate(3)


def test_shipped_dispersions_by_name():
    from vm_dynamics.campaign import load_dispersions
    d = load_dispersions("spacecraft_arm")
    assert d.seed == 2026 and d.runs == 1000
    assert {e.section for e in d.entries} >= {"mass", "inertia", "initial"}
    with pytest.raises(ValueError, match="dispersions file not found: 'no_such_file'"):
        load_dispersions("no_such_file")


def test_chunks_cover_every_run_once_in_order():
    from vm_dynamics.campaign.backends import chunked
    for n, workers, size in ((1000, 2, 8), (5, 2, 1), (100, 4, 3)):
        chunks = chunked(range(n), workers)
        assert [k for c in chunks for k in c] == list(range(n))
        assert max(len(c) for c in chunks) == size
    assert [len(c) for c in chunked(range(10), 2, chunk_size=4)] == [4, 4, 2]
