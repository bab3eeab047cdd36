"""Regenerate the README's figures from the commands their captions name, and the numbers the
captions quote.

    python docs/make_figures.py                 # run the commands, write docs/*.png|gif, print captions
    python docs/make_figures.py --check README.md   # also: exit 1 if a caption's number differs
    python docs/make_figures.py --only tumbling --keep /tmp/figs   # one figure; keep the runs

Each figure is one ``vm-sim`` command (the one its caption names); the numbers come from the
run's ``summary.json``, what ``vm-sim`` also prints.  A caption's number matches if it is what
the run gives at the precision the caption quotes (``0.093 rad`` matches 0.0934, ``2e-15``
matches 2.1e-15: same order of magnitude and leading digit).  ``--check`` reads each caption
from the README (the paragraph in ``*...*`` after the figure's image) and compares the numbers
named in :data:`FIGURES`.  The RViz screenshot needs a display and ROS 2: not regenerated here.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent


def _vm_sim() -> list[str]:
    exe = Path(sys.executable).with_name("vm-sim")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "vm_dynamics.app.cli"]


def _spacecraft_numbers(summary: dict) -> dict:
    from vm_dynamics.config.scenario import load_scenario
    p0 = np.asarray(load_scenario("spacecraft_arm").g0)[:3, 3]
    fs = summary["final_state"]
    return {
        "bus_drift_cm": 100 * float(np.linalg.norm(np.array(fs["base_position"]) - p0)),
        "bus_turn_rad": float(np.linalg.norm(fs["base_rotation_vector"])),
        "tracking_error_rad": summary["tracking_error_final"],
        "momentum_drift": summary["momentum_drift_rel"],
    }


def _tumbling_numbers(summary: dict) -> dict:
    e = summary["euler_angle_model"]
    return {"closest_to_pitch_90_deg": e["closest_to_gimbal_lock_deg"],
            "lp_energy_error": e["lp_energy_drift_rel"]}


def _capture_numbers(summary: dict) -> dict:
    grasp = [e for e in summary["events"] if e["event"] == "grasp"][0]
    return {"peak_contact_force_N": summary["peak_contact_force"],
            "grasp_time_s": grasp["t"],
            "grasp_error_mm": 1e3 * grasp["position_error"],
            "momentum_drift": summary["momentum_drift_relative"],
            "energy_dissipated_J": summary["energy_dissipated_contact"],
            "energy_weld_J": summary["energy_lost_in_grasp"],
            "energy_balance_J": summary["energy_balance_error"]}


#: where the capture captions quote each number of :func:`_capture_numbers` (both capture
#: figures say it in the same words)
CAPTURE_PATTERNS = {
    "peak_contact_force_N": r"peak contact force ([\d.eE+-]+) N",
    "grasp_time_s": r"grasps at t = ([\d.eE+-]+) s",
    "grasp_error_mm": r"\(([\d.eE+-]+) mm from",
    "momentum_drift": r"constant to ([\d.eE+-]+)",
    "energy_dissipated_J": r"dissipation \(([\d.eE+-]+) J",
    "energy_weld_J": r"plastic loss \(([\d.eE+-]+) J",
    "energy_balance_J": r"closes to ([\d.eE+-]+) J",
}


def capture_quoted(*keys: str) -> list[tuple[str, str]]:
    """``quoted`` of a capture figure: ``(number, pattern)`` of the ``keys`` its caption quotes."""
    return [(k, CAPTURE_PATTERNS[k]) for k in keys]


#: name -> (vm-sim arguments; files of the run's output copied to docs/; the README image whose
#: caption quotes the numbers; the numbers from summary.json; caption template)
FIGURES = {
    "spacecraft_arm": dict(
        argv=["spacecraft_arm", "--video", str(DOCS / "spacecraft_arm.gif")],
        copy={"base.png": "spacecraft_arm_base.png"},
        image="docs/spacecraft_arm_base.png",
        numbers=_spacecraft_numbers,
        caption=("*The bus reacts to the arm deployment: it drifts {bus_drift_cm:.0f} cm and "
                 "turns {bus_turn_rad:.2g} rad while the arm tracks its minimum-jerk reference "
                 "to {tracking_error_rad:.0e} rad and the total momentum stays zero (relative "
                 "drift {momentum_drift:.0e}; `summary.json`).*"),
        quoted=[("bus_drift_cm", r"drifts ([\d.eE+-]+) cm"),
                ("bus_turn_rad", r"turns ([\d.eE+-]+) rad"),
                ("tracking_error_rad", r"reference\s+to ([\d.eE+-]+) rad"),
                ("momentum_drift", r"relative\s+drift ([\d.eE+-]+)")]),
    "tumbling": dict(
        argv=["tumbling"],
        copy={"euler_comparison.png": "tumbling_euler_comparison.png"},
        image="docs/tumbling_euler_comparison.png",
        numbers=_tumbling_numbers,
        caption=("*`vm-sim tumbling`: the attitude passes within {closest_to_pitch_90_deg:.0e}° "
                 "of pitch 90°. The LP model (RKMK4 on SE(3)) keeps the energy to "
                 "{lp_energy_error:.0e}; the ZYX Euler-angle model's mass matrix conditioning "
                 "blows up like 1/cos²θ and its state overflows at the gimbal lock.*"),
        quoted=[("closest_to_pitch_90_deg", r"within ([\d.eE+-]+)°"),
                ("lp_energy_error", r"energy\s+to ([\d.eE+-]+)")]),
    "capture_tumbling": dict(
        argv=["capture_tumbling"],
        copy={"capture.png": "capture_tumbling.png"},
        image="docs/capture_tumbling.png",
        numbers=_capture_numbers,
        caption=("*`vm-sim capture_tumbling`: the free-floating arm tracks the grapple fixture of "
                 "a 250 kg box tumbling at 1.9 N m s, touches it (peak contact force "
                 "{peak_contact_force_N:.2g} N), grasps at t = {grasp_time_s:.3g} s "
                 "({grasp_error_mm:.2g} mm from the fixture) and the bus thrusters bring the "
                 "stack to rest. Total momentum minus the thrusters' impulse stays constant to "
                 "{momentum_drift:.0e} (relative); the energy balance, with the contact's "
                 "dissipation ({energy_dissipated_J:.1e} J) and the grasp's plastic loss "
                 "({energy_weld_J:.1e} J), closes to {energy_balance_J:.0e} J.*"),
        quoted=capture_quoted("peak_contact_force_N", "grasp_time_s", "grasp_error_mm",
                              "momentum_drift", "energy_dissipated_J", "energy_weld_J",
                              "energy_balance_J")),
    "capture_orbit": dict(
        argv=["capture_orbit"],
        copy={"capture.png": "capture_orbit.png"},
        image="docs/capture_orbit.png",
        numbers=_capture_numbers,
        caption=("*`vm-sim capture_orbit`: the same capture in a 400 km circular orbit (51.6°), "
                 "3 m along-track, with two-body gravity and the gravity-gradient force and "
                 "torque on both bodies, integrated in the chief frame: peak contact force "
                 "{peak_contact_force_N:.2g} N, grasps at t = {grasp_time_s:.3g} s "
                 "({grasp_error_mm:.2g} mm from the fixture). Total momentum minus the "
                 "thrusters' and the orbit's impulses stays constant to {momentum_drift:.0e} "
                 "(relative); the energy balance with the tidal potential closes to "
                 "{energy_balance_J:.0e} J.*"),
        quoted=capture_quoted("peak_contact_force_N", "grasp_time_s", "grasp_error_mm",
                              "momentum_drift", "energy_balance_J")),
}


class _Number(float):
    """A float whose ``e`` formats drop the exponent's zero padding (``4e-5``, not ``4e-05``)."""

    def __format__(self, spec: str) -> str:
        text = format(float(self), spec)
        return re.sub(r"e([+-])0*(\d)", lambda m: "e" + m.group(1).replace("+", "") + m.group(2),
                      text) if spec.endswith("e") else text


def caption(name: str, numbers: dict) -> str:
    """The caption of figure ``name`` with ``numbers``, as the README should say it."""
    return FIGURES[name]["caption"].format(**{k: _Number(v) for k, v in numbers.items()})


def run_figure(name: str, work: Path) -> dict:
    """Run the figure's command into ``work/name``, copy its plots to docs/; its numbers."""
    fig = FIGURES[name]
    out = work / name
    cmd = _vm_sim() + fig["argv"] + ["--out", str(out), "--force", "--quiet"]
    print("$ " + " ".join(["vm-sim"] + fig["argv"]), flush=True)
    p = subprocess.run(cmd, cwd=REPO, text=True, capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"make_figures: {name}: vm-sim exited {p.returncode}:\n{p.stderr}")
    for src, dst in fig["copy"].items():
        shutil.copyfile(out / src, DOCS / dst)
    summary = json.loads((out / "summary.json").read_text())
    return fig["numbers"](summary)


def agrees(quoted: str, value: float) -> bool:
    """True if ``value`` rounds to ``quoted`` at the precision ``quoted`` is written with
    (significant digits of its mantissa; ``6e-16`` = one digit)."""
    q = float(quoted)
    if value is None or not math.isfinite(value):
        return False
    if q == 0:
        return value == 0
    mant = quoted.lower().split("e")[0].lstrip("+-").lstrip("0").replace(".", "").lstrip("0")
    digits = max(len(mant), 1)
    return float(f"{value:.{digits - 1}e}") == float(f"{q:.{digits - 1}e}")


def caption_of(readme: str, image: str) -> str:
    """The italic paragraph after the image ``image`` in the README (one line)."""
    i = readme.find(f"]({image})")
    if i < 0:
        raise ValueError(f"README has no image {image}")
    m = re.search(r"\n\s*\n\*(.+?)\*\s*\n", readme[i:], re.S)
    if m is None:
        raise ValueError(f"README: no caption after {image}")
    return " ".join(m.group(1).split())


def check(readme: str, name: str, numbers: dict) -> list[str]:
    """Mismatches between the README caption of figure ``name`` and ``numbers``."""
    fig = FIGURES[name]
    cap = caption_of(readme, fig["image"])
    problems = []
    for key, pattern in fig["quoted"]:
        m = re.search(pattern, cap)
        if m is None:
            problems.append(f"{name}: the caption quotes no {key} ({pattern!r}): {cap!r}")
        elif not agrees(m.group(1).rstrip("."), numbers[key]):
            problems.append(f"{name}: caption says {key} = {m.group(1)}, the run gives "
                            f"{numbers[key]:.3g}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(FIGURES), action="append")
    ap.add_argument("--check", metavar="README", help="compare the captions of this README")
    ap.add_argument("--keep", metavar="DIR", help="keep the runs' output here")
    args = ap.parse_args(argv)
    names = args.only or list(FIGURES)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        for name in names:
            numbers = run_figure(name, work)
            print(json.dumps({name: numbers}))
            print(caption(name, numbers), flush=True)
            if args.check:
                problems += check(Path(args.check).read_text(), name, numbers)
    for line in problems:
        print(f"make_figures: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
