"""The README's figures come from the commands their captions name (docs/make_figures.py), and
the numbers the captions quote are what those commands give now."""
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def make_figures():
    spec = importlib.util.spec_from_file_location("make_figures", REPO / "docs" / "make_figures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_figures"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("quoted, value, ok", [
    ("0.093", 0.0934, True), ("0.093", 0.0926, True), ("0.093", 0.0951, False),
    ("6e-16", 6.4e-16, True), ("6e-16", 2.1e-15, False), ("2e-15", 2.1e-15, True),
    ("4", 4.4, True), ("4", 3.4, False), ("4e-5", 3.96e-5, True), ("2e-14", None, False)])
def test_a_quoted_number_agrees_at_the_precision_it_is_written_with(quoted, value, ok):
    assert make_figures().agrees(quoted, value) is ok


def test_a_stale_caption_is_reported():
    mf = make_figures()
    readme = ("x\n\n![a](docs/tumbling_euler_comparison.png)\n\n*`vm-sim tumbling`: the "
              "attitude passes within 4e-5° of pitch 90° at t = 2.04 s. The LP model keeps the "
              "energy to 2e-15; the rest.*\n\nmore\n")
    assert mf.check(readme, "tumbling", {"closest_to_pitch_90_deg": 4.2e-5,
                                         "lp_energy_error": 1.7e-15}) == []
    problems = mf.check(readme, "tumbling", {"closest_to_pitch_90_deg": 4.2e-5,
                                             "lp_energy_error": 6.1e-16})
    assert problems == ["tumbling: caption says lp_energy_error = 2e-15, the run gives 6.1e-16"]


def test_the_generated_caption_quotes_what_check_reads():
    mf = make_figures()
    sample = {"bus_drift_cm": 4.37, "bus_turn_rad": 0.0934, "tracking_error_rad": 2.3e-14,
              "momentum_drift": 6.4e-16, "closest_to_pitch_90_deg": 4.2e-5,
              "lp_energy_error": 2.1e-15, "peak_contact_force_N": 2.37, "grasp_time_s": 13.0,
              "grasp_error_mm": 1.74, "energy_dissipated_J": 3.05e-4, "energy_weld_J": 1.02e-4,
              "energy_balance_J": 1.9e-10}
    for name, fig in mf.FIGURES.items():
        numbers = {key: sample[key] for key, _ in fig["quoted"]}
        readme = f"![x]({fig['image']})\n\n" + mf.caption(name, numbers) + "\n"
        assert mf.check(readme, name, numbers) == [], name


def test_the_readme_captions_match_what_the_commands_give(tmp_path):
    """Runs the commands (minutes): regenerates docs/*.png|gif in a copy-free way (the files
    are rewritten in place) and checks the README's captions against the runs."""
    mf = make_figures()
    problems = []
    readme = (REPO / "README.md").read_text()
    for name in mf.FIGURES:
        numbers = mf.run_figure(name, tmp_path)
        problems += mf.check(readme, name, numbers)
    assert problems == []


def test_the_readme_scenario_table_lists_every_scenario():
    import re

    from vm_dynamics.config.scenario import list_scenarios
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| scenario | what it shows |"):]
    table = table[:table.index("\n\n")]
    listed = set(re.findall(r"^\| `([a-z_0-9]+)` \|", table, re.M))
    names = {name for name, _ in list_scenarios()}
    assert listed == names, sorted(names ^ listed)
