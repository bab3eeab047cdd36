"""``vm-sim``: run a scenario and write a ROS 2 recording, a summary and plots.

    vm-sim SCENARIO [--duration S] [--dt S] [--integrator NAME] [--controller NAME|none]
                    [-p NAME:=VALUE ...] [--joint-positions LIST] [--joint-velocities LIST]
                    [--base-position LIST] [--base-orientation LIST] [--base-twist LIST]
                    [--out DIR [--force]] [--record-rate HZ] [--no-plots] [--quiet]
    vm-sim --list

Writes to DIR (default ``out/<scenario>``): ``trajectory.mcap`` (``/joint_states``, ``/odom``,
``/tf`` of every moving link, ``/tf_static``, ``/robot_description``, ``/clock``; playable with
``ros2 bag play``, opens in Foxglove and ``vm-view``), ``summary.json`` and PNG plots.
``--view`` shows the run live in the browser (``vm-view``), ``--video FILE.mp4|.gif`` renders it.
DIR must be new, empty or an earlier run's output (``--force`` writes into a directory that
holds other files); it is never a system directory (``/``, ``/etc``, ``/usr``, the home
directory, ...), also not through a symbolic link.

**Parameters.**  The scenario file's values are overridden by ``-p name:=value`` (the ROS 2
syntax and typing of the nodes: ``-p controller.kp:=30.0``, ``-p initial.joint_positions:=[0.1,
0.2]``), and those by the dedicated options (``--dt``, ``--duration``, ``--integrator``,
``--controller``, the initial-state options).  Giving one parameter two different values, once
with ``-p`` and once with its option, is an error.  With ``--controller`` naming another
controller than the scenario's, the scenario's controller parameters that the new controller
also has are kept (the others are listed as dropped).

**Exit codes.**  0: done; 2: bad arguments or scenario values (one line on stderr, before any
simulation); 3: the simulation diverged (the partial trajectory, plots and a summary with
``"diverged": true`` are written); 4: an output could not be written (a full disk, a file size
limit: one line on stderr naming the file and what it keeps; the run stops at once, the samples
already in trajectory.mcap stay readable and summary.json says what was written if there is
room for it); 130: interrupted by Ctrl-C (what was computed is written; a second Ctrl-C while
writing skips the remaining plots but never the summary).

**A killed run.**  trajectory.mcap is written in place, chunk by chunk at most a second apart,
each followed by a closing footer (:mod:`vm_dynamics.ros.mcap_stream`): after ``kill -9`` (or a
crash) it is a readable MCAP with every sample up to its last chunk, and summary.json, written
when the run starts, says ``"finished": false``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["main", "run_scenario", "EXIT_OK", "EXIT_USAGE", "EXIT_DIVERGED", "EXIT_INTERRUPTED",
           "EXIT_WRITE_ERROR", "DIVERGENCE_LIMITS", "SYSTEM_TREES", "SYSTEM_DIRS",
           "parse_param_overrides",
           "resolve_controller_params"]

EXIT_OK, EXIT_USAGE, EXIT_DIVERGED, EXIT_WRITE_ERROR, EXIT_INTERRUPTED = 0, 2, 3, 4, 130

#: A sample beyond these limits (or with a NaN/Inf) stops the run as diverged (SI units: m/s and
#: rad/s for velocities, m and rad for positions).
DIVERGENCE_LIMITS = {"velocity": 1e6, "position": 1e9}
#: The most samples a run keeps in memory for its summary and plots: a longer run keeps every
#: k-th sample (k = ceil(steps / MAX_KEPT_SAMPLES)), while trajectory.mcap gets every sample
#: (at --record-rate) streamed to disk during the run, so memory stays flat with the duration.
MAX_KEPT_SAMPLES = 50_000

#: Names allowed for the default output directory ``out/<scenario>``.
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: Output directories vm-sim never writes into: these trees of the operating system (and
#: everything below them) ...
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
                "/run", "/sbin", "/sys", "/usr", "/System", "/Library", "/private/etc")
#: ... and these directories themselves (their subdirectories are fine), with the home
#: directory.
SYSTEM_DIRS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp", "/var",
               "/var/tmp", "/Users", "/Volumes", "/private", "/private/tmp", "/private/var")

_INITIAL_OPTIONS = (("joint_positions", "--joint-positions"),
                    ("joint_velocities", "--joint-velocities"),
                    ("base_position", "--base-position"),
                    ("base_orientation", "--base-orientation"),
                    ("base_twist", "--base-twist"))


class UsageError(ValueError):
    """A user error (bad option or value): printed by ``vm-sim`` as one line, exit code 2; a
    ``ValueError`` for library callers of :func:`run_scenario`."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage otherwise)
        raise UsageError(message)


def _parser():
    p = _Parser(prog="vm-sim", description="Simulate a vehicle-manipulator scenario with the "
                "Lagrange-Poincaré equations and write trajectory.mcap, summary.json and plots.")
    p.add_argument("scenario", nargs="?", help="scenario name (see --list) or path to a YAML file")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--duration", type=float, help="simulated time, s (default: scenario's)")
    p.add_argument("--dt", type=float, help="time step, s (default: scenario's)")
    p.add_argument("--integrator", help="rkmk4 (default), lie_euler or dopri5")
    p.add_argument("--controller", help="controller plug-in name, or 'none' for open loop "
                   "(default: the scenario's)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                   help="set a scenario or controller parameter (ROS 2 syntax, as for the nodes),"
                   " e.g. -p controller.kp:=30.0 -p dt:=0.002; repeatable")
    init = p.add_argument_group("initial state (shorthands for -p initial.<name>:=[...])")
    for key, flag in _INITIAL_OPTIONS:
        init.add_argument(flag, metavar="LIST", dest=key,
                          help=f"initial.{key}: numbers as [a, b, ...] or a,b,...")
    p.add_argument("--out", help="output directory (default: out/<scenario>); a new or empty "
                   "directory, or one an earlier vm-sim run wrote (see --force)")
    p.add_argument("--force", action="store_true",
                   help="write into an existing directory that holds other files (never into "
                   "a system directory such as / or /etc)")
    p.add_argument("--record-rate", type=float, default=100.0,
                   help="rate of the MCAP recording, Hz (default 100; 0 = every step)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--view", action="store_true",
                   help="show the robot in the browser as it simulates (at real time), then "
                   "replay it with a time slider until Ctrl-C; prints the URL (needs [viz])")
    p.add_argument("--host", default="127.0.0.1",
                   help="--view: address to serve on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8080,
                   help="--view: port (default 8080; 0 = any free port)")
    p.add_argument("--video", metavar="FILE",
                   help="also render the robot offscreen to FILE (.mp4: 800x600 at 25 fps, "
                   ".gif: 440x330 at 10 fps)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


# ----------------------------------------------------------------------------- arguments
def parse_param_overrides(items) -> dict:
    """``["name:=value", ...]`` -> ``{name: value}``, values typed as ROS 2 types them
    (``rcl`` YAML rules: ``30`` is an integer, ``30.0`` a double, ``[1.0, 2.0]`` a list, aliases
    rejected).  A later assignment to the same name replaces an earlier one."""
    from ..transport.ros_args import parse_param_value
    out = {}
    for item in items or []:
        name, sep, value = str(item).partition(":=")
        if not sep or not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*",
                                                    name):
            raise UsageError(f"-p {item!r}: expected NAME:=VALUE with a parameter name like "
                             f"controller.kp")
        try:
            out[name] = parse_param_value(value, f"-p {name}")
        except ValueError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
    return out


def _number_list(text: str, flag: str) -> list:
    """``"0.1, 0.2"``, ``"[0.1, 0.2]"`` or ``"0.1 0.2"`` -> ``[0.1, 0.2]`` (ints allowed)."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    try:
        return [float(x) for x in re.split(r"[,\s]+", body.strip()) if x]
    except ValueError:
        raise UsageError(f"{flag}: expected numbers like 0.1,0.2 or [0.1, 0.2], got "
                         f"{text!r}") from None


def _positive_finite(value, flag):
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be positive and finite, got {value:g}")
    return value


def _overrides(args) -> dict:
    """Scenario overrides from ``-p`` and the dedicated options (which must not contradict)."""
    overrides = parse_param_overrides(args.param)
    options = {}
    if args.duration is not None:
        options["duration"] = (_positive_finite(args.duration, "--duration"), "--duration")
    if args.dt is not None:
        options["dt"] = (_positive_finite(args.dt, "--dt"), "--dt")
    if args.integrator is not None:
        from ..sim.integrators import METHODS
        if args.integrator not in METHODS:
            raise UsageError(f"--integrator: unknown {args.integrator!r}; choose one of "
                             f"{', '.join(METHODS)}")
        options["integrator"] = (args.integrator, "--integrator")
    for key, flag in _INITIAL_OPTIONS:
        text = getattr(args, key)
        if text is not None:
            options[f"initial.{key}"] = (_number_list(text, flag), flag)
    for name, (value, flag) in options.items():
        if name in overrides and overrides[name] != value:
            raise UsageError(f"{flag} {value!r} contradicts -p {name}:={overrides[name]!r}; "
                             f"give one")
        overrides[name] = value
    return overrides


def resolve_controller_params(scenario_section: dict | None, name: str, explicit=()) -> tuple:
    """Parameters for controller ``name`` given the scenario's ``controller`` section.

    Precedence: the controller's defaults < the scenario's section < ``-p controller.<p>``.
    When ``name`` is the section's controller, the whole section applies.  When it is another
    one, the section's values for parameters that ``name`` also has are kept, the others are
    dropped; ``explicit`` (names given with ``-p``) are always kept, so an unknown one is an
    error.  Returns ``(params, kept, dropped)``."""
    from ..control import get_controller
    section = dict(scenario_section or {})
    section_name = section.pop("name", None)
    if name == section_name:
        return section, sorted(section), []
    known = type(get_controller(name)).PARAMS
    kept = {k: v for k, v in section.items() if k in known or k in explicit}
    dropped = sorted(k for k in section if k not in kept)
    return kept, sorted(kept), dropped


@dataclass
class _Run:
    """Everything a run needs, checked before the simulation starts."""

    scn: object
    ctrl_name: str | None
    ctrl: object
    reference: object
    out: Path
    record_rate: float
    plots: bool
    progress: bool
    notes: list = field(default_factory=list)
    hooks: list = field(default_factory=list)      # per-sample hooks (--view, --video)
    recorder: object = None                         # trajectory.mcap, streamed during the run
    record_every: int = 1                           # samples kept in memory: every k-th
    recording_time: float = 0.0                     # wall s spent streaming trajectory.mcap
    write_error: OSError | None = None              # the recording's failed write (disk full)
    setup_time: float | None = None                 # wall s of the engine's set-up (kernels)


def _system_directory(real: Path) -> str | None:
    """The system directory ``real`` (a resolved path) is or lies in, else None."""
    home = os.path.realpath(os.path.expanduser("~"))
    text = str(real)
    for tree in SYSTEM_TREES:
        if text == tree or text.startswith(tree + os.sep):
            return tree
    if text in SYSTEM_DIRS or text == home:
        return text
    return None


def _earlier_output(directory: Path) -> bool:
    """``directory`` holds the summary.json of an earlier vm-sim run (a regular file with a
    JSON object naming a scenario and an integrator)."""
    summary = directory / "summary.json"
    try:
        if summary.is_symlink() or not summary.is_file() or summary.stat().st_size > 2**20:
            return False
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "scenario" in data and "integrator" in data


def _foreign_entries(directory: Path, limit: int = 3) -> list:
    """Up to ``limit`` names in an existing ``directory`` if it is neither empty nor an
    earlier vm-sim output directory."""
    with os.scandir(directory) as it:
        names = []
        for entry in it:
            names.append(entry.name)
            if len(names) >= limit:
                break
    if not names or _earlier_output(directory):
        return []
    return sorted(names)


def _output_dir(scn, out_arg, force: bool = False) -> Path:
    """The output directory, created and checked writable; ``UsageError`` otherwise.

    Without ``--out`` it is ``out/<scenario name>``: the name must be a plain file name and the
    directory must resolve inside ``out/`` (no ``..``, no absolute path, no link leaving it).
    Either way it must not be, or resolve (through symbolic links) into, a system directory
    (:data:`SYSTEM_TREES`, :data:`SYSTEM_DIRS`, the home directory), and an existing
    directory must be empty or hold an earlier run's output, unless ``force``."""
    if out_arg is not None:
        out, flag = Path(out_arg), "--out"
        if str(out_arg).strip() == "":
            raise UsageError("--out: empty directory name")
    else:
        if not _SAFE_NAME.fullmatch(scn.name) or scn.name in (".", ".."):
            raise UsageError(f"scenario: the name {scn.name!r} cannot be the output directory "
                             f"out/<name> (use letters, digits, '_', '.', '-'); pass --out DIR")
        out, flag = Path("out") / scn.name, "output directory"
        if not out.resolve().is_relative_to(Path("out").resolve()):   # before touching it
            raise UsageError(f"output directory: {str(out)!r} resolves to "
                             f"{str(out.resolve())!r}, outside out/; pass --out DIR")
    real = Path(os.path.realpath(out))
    system = _system_directory(real)
    if system is not None:
        where = "" if str(real) == str(out) else f" (it resolves to {str(real)!r})"
        raise UsageError(f"{flag}: {str(out)!r} is a system directory or lies in one "
                         f"({system}){where}; vm-sim writes only into directories of your own")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag}: {str(out)!r} exists and is not a directory")
    try:
        if out.is_dir() and not force:
            foreign = _foreign_entries(out)
            if foreign:
                raise UsageError(f"{flag}: {str(out)!r} already holds files that are not an "
                                 f"earlier vm-sim run's ({', '.join(foreign)}, ...); choose a "
                                 f"new or empty directory, or pass --force to write there")
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".vm-sim-write-test.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write in {str(out)!r}: "
                         f"{exc.strerror or exc}") from None
    return out


def _check_initial_within_limits(scn):
    lim = DIVERGENCE_LIMITS
    for name, a, limit in (("initial.base_twist", scn.V0, lim["velocity"]),
                           ("initial.joint_velocities", scn.qd0, lim["velocity"]),
                           ("initial.joint_positions", scn.q0, lim["position"]),
                           ("initial.base_position", scn.g0[:3, 3], lim["position"])):
        if a.size and float(abs(a).max()) > limit:
            raise ValueError(f"{name}: |value| {float(abs(a).max()):.3g} exceeds {limit:g}, the "
                             f"limit beyond which vm-sim declares divergence")


def prepare_run(scn, controller_name, out_dir, record_rate, plots, progress, explicit=(),
                force=False) -> _Run:
    """Build and check the controller, the reference and the output directory (ValueError or
    UsageError for bad values; ``force``: see :func:`_output_dir`)."""
    from ..control import available_controllers, get_controller
    from ..control.references import reference_from_config
    from ..sim.simulate import State
    if record_rate is None or not (math.isfinite(record_rate) and record_rate >= 0):
        raise UsageError(f"--record-rate must be a finite number >= 0, got {record_rate}")
    _check_initial_within_limits(scn)
    section = scn.controller or {}
    name = controller_name if controller_name is not None else section.get("name")
    if name in ("none", ""):
        name = None
    notes, ctrl, reference = [], None, None
    if name is not None:
        if not isinstance(name, str) or name not in available_controllers():
            which = "--controller" if controller_name is not None else "controller.name"
            raise UsageError(f"{which}: unknown {name!r}; available: "
                             f"{', '.join(available_controllers())}, none")
        params, kept, dropped = resolve_controller_params(section, name, explicit)
        if section.get("name") not in (None, name):
            notes.append(f"controller {name}: kept {', '.join(kept) or 'no parameters'} from "
                         f"the scenario's {section['name']} section"
                         + (f"; dropped {', '.join(dropped)} (not {name} parameters)"
                            if dropped else ""))
        ctrl = get_controller(name, params)
        reference = reference_from_config(scn.reference or {})
        state0 = State(0.0, scn.g0, scn.V0, scn.q0, scn.qd0)
        external = list(scn.forces) or None       # the controller compensates them
        ctrl.reset(scn.model, state0, external=external)
        tau, bw = ctrl.compute(0.0, state0, reference)       # dimension errors surface now
        from ..core.validation import as_vector
        as_vector(tau, scn.model.n, f"controller {name}: tau at t = 0")
        as_vector(bw, scn.model.b, f"controller {name}: base_wrench at t = 0")
        ctrl.reset(scn.model, state0, external=external)
    out = _output_dir(scn, out_dir, force)
    return _Run(scn=scn, ctrl_name=name, ctrl=ctrl, reference=reference, out=out,
                record_rate=float(record_rate), plots=plots, progress=progress, notes=notes)


# ----------------------------------------------------------------------------- running
class _DivergenceMonitor:
    """``simulate`` callback: stops at the first sample with a NaN/Inf or beyond
    :data:`DIVERGENCE_LIMITS`, remembering when and why."""

    def __init__(self):
        self.t = None
        self.reason = None
        self.last_good_t = 0.0

    def __call__(self, state) -> bool:
        import numpy as np
        checks = (("base twist", state.V, DIVERGENCE_LIMITS["velocity"]),
                  ("joint velocity", state.qd, DIVERGENCE_LIMITS["velocity"]),
                  ("joint position", state.q, DIVERGENCE_LIMITS["position"]),
                  ("base pose", state.g[:3], DIVERGENCE_LIMITS["position"]))
        for what, a, limit in checks:
            if a.size:
                m = float(np.abs(a).max())
                if not m <= limit:
                    self.t = float(state.t)
                    self.reason = (f"non-finite {what}" if not math.isfinite(m)
                                   else f"{what} {m:.3g} exceeds {limit:g}")
                    return True
        self.last_good_t = float(state.t)
        return False


@contextlib.contextmanager
def _phase(log, what: str):
    """Announce a phase that may take more than a second and report its duration."""
    t0 = time.perf_counter()
    log(f"vm-sim: {what} ...")
    yield
    dt = time.perf_counter() - t0
    if dt >= 1.0:
        log(f"vm-sim: {what}: {dt:.1f} s")


class _DeferredInterrupt:
    """While active, SIGINT sets :attr:`requested` (the work continues: the summary is always
    written).  On exit the previous handler comes back, except after an interrupted run
    (``exiting``, or a Ctrl-C inside): the process is then on its way out with 130, and a
    further Ctrl-C is ignored so that it cannot turn that exit into a death by SIGINT."""

    def __init__(self, log, exiting: bool = False,
                 message: str = "skipping the remaining plots; writing the summary"):
        self.requested = False
        self._exiting = exiting
        self._log = log
        self._message = message
        self._previous = None

    def _handler(self, signum, frame):
        if not self.requested:
            self._log(f"vm-sim: Ctrl-C: {self._message}")
        self.requested = True

    @contextlib.contextmanager
    def interruptible(self):
        """Inside, SIGINT raises ``KeyboardInterrupt`` again; it is caught here, recorded in
        :attr:`requested`, and ends only the block (for optional, long phases)."""
        if self._previous is None:
            yield
            return
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            yield
        except KeyboardInterrupt:
            self.requested = True
            self._log("vm-sim: Ctrl-C: skipped; writing the outputs")
        finally:
            signal.signal(signal.SIGINT, self._handler)

    def __enter__(self):
        try:
            self._previous = signal.signal(signal.SIGINT, self._handler)
        except ValueError:          # not the main thread: nothing to defer
            self._previous = None
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN if self._exiting or self.requested
                          else self._previous)
        return False


def _simulate(run: _Run, log):
    """Integrate; returns ``(traj or None, wall, diverged dict or None, interrupted)``
    (a Ctrl-C before the first sample gives no trajectory but is still an interruption)."""
    import numpy as np

    from ..core.errors import SimulationDiverged
    from ..core.signals import deferred_interrupts
    with deferred_interrupts(raise_after=True):   # imports, the controller's set-up (_main)
        from ..sim.simulate import simulate
        ctrl_inputs = run.ctrl.inputs(run.reference) if run.ctrl is not None else None
    scn, ctrl, model = run.scn, run.ctrl, run.scn.model
    prescribed = scn.prescribed_motion()
    open_loop = scn.effort_input.active
    if ctrl is not None:
        ctrl_tau, ctrl_bw = ctrl_inputs
        tau_fn = ((lambda t, s: ctrl_tau(t, s) + scn.open_loop_torque(t, s)) if open_loop
                  else ctrl_tau)
        bw_fn = ctrl_bw
    else:       # open loop: pass only the inputs that exist (None = no input, no call)
        tau_fn = scn.open_loop_torque if open_loop else None
        bw_fn = None
    # the environment (hydrodynamic damping, buoyancy of vehicle and links) acts inside the
    # engine at every stage; simulate records it in traj.base_wrench
    frame_fn = None
    if prescribed is not None:
        tau_fn = None  # the joints follow the motion; simulate returns the efforts in traj.tau
    monitor = _DivergenceMonitor()

    started = []

    def callback(state):
        if not started:             # the first sample: the engine's set-up is over
            started.append(True)
            log(f"vm-sim: integrating {scn.duration:g} s (Ctrl-C stops and writes what was "
                f"computed) ...")
        stop = monitor(state)
        for hook in run.hooks:
            hook(state)
        return stop or ctrl_c.requested or run.write_error is not None
    recorder = run.recorder
    recording_time = [0.0]

    def on_sample(t, g, V, q, qd, tau, bw):
        # a non-finite sample is the divergence the monitor reports; it is not recorded
        if recorder is not None and run.write_error is None and np.isfinite(g).all() \
                and np.isfinite(V).all() and np.isfinite(q).all() and np.isfinite(qd).all() \
                and np.isfinite(tau).all():
            start = time.perf_counter()
            try:
                recorder.add(t, g, V, q, qd, effort=tau)
            except OSError as exc:      # the disk is full: stop here (callback), keep the file
                run.write_error = exc
            recording_time[0] += time.perf_counter() - start
    t0 = time.perf_counter()
    diverged = None
    traj = None
    # Ctrl-C during the integration stops it at the next sample (the callback asks simulate
    # to stop): no KeyboardInterrupt is raised inside the recording's writer, which could
    # leave a sample half written (or the trajectory ahead of the recording)
    ctrl_c = _DeferredInterrupt(log, message="stopping the integration; writing what was "
                                             "computed")
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), ctrl_c:
            warnings.simplefilter("ignore", RuntimeWarning)   # divergence is reported once
            traj = simulate(model, scn.g0, scn.V0, scn.q0, scn.qd0, scn.duration, scn.dt,
                            tau=tau_fn, base_wrench=bw_fn, method=scn.integrator,
                            prescribed=prescribed, progress=run.progress, callback=callback,
                            forces=scn.forces, record_every=run.record_every,
                            on_sample=on_sample,
                            **({"frame_wrenches": frame_fn} if frame_fn else {}))
    except SimulationDiverged as exc:
        diverged = {"t": exc.t, "reason": exc.reason}
        traj = exc.trajectory
    except (ValueError, ArithmeticError) as exc:
        # the dynamics failed on a state the monitor had not yet flagged
        first = str(exc).splitlines()[0] if str(exc) else ""
        t_fail = getattr(exc, "t", None)      # e.g. engine.SimulationError carries the time
        diverged = {"t": float(t_fail) if isinstance(t_fail, (int, float)) else monitor.last_good_t,
                    "reason": f"{type(exc).__name__}: {first}" if first else type(exc).__name__}
    # the integration's wall time: without the engine's set-up (loading, or on a machine's
    # first run compiling, the kernels: setup_time_s) and without writing the recording
    # (streamed during the run, formerly after it: recording_time_s)
    run.recording_time = recording_time[0]
    total = time.perf_counter() - t0
    sim_wall = getattr(traj, "wall_time", 0.0) if traj is not None else 0.0
    run.setup_time = (traj.meta.get("setup_time") if traj is not None else None)
    wall = (sim_wall if sim_wall > 0 else total) - recording_time[0]
    if monitor.t is not None and diverged is None:
        diverged = {"t": monitor.t, "reason": monitor.reason}
        traj = traj[:len(traj) - 1] if traj is not None else None   # drop the flagged sample
    interrupted = bool(getattr(traj, "interrupted", False)) or ctrl_c.requested
    if traj is not None and len(traj) == 0:
        traj = None
    return traj, wall, diverged, interrupted


def run_scenario(scn, controller_name=None, out_dir=None, progress=True, record_rate=100.0,
                 plots=True, log=print, _explicit=(), force=False):
    """Simulate a loaded :class:`~vm_dynamics.config.scenario.Scenario` and write its outputs.

    Everything that depends on the input (controller and its parameters, reference, output
    directory) is checked before the simulation.  Returns the summary dict; its
    ``"diverged"`` and ``"interrupted"`` keys tell how the run ended.
    """
    run = prepare_run(scn, controller_name, out_dir, record_rate, plots, progress, _explicit,
                      force)
    return execute_run(run, log)


def execute_run(run: _Run, log):
    scn, model = run.scn, run.scn.model
    for note in run.notes:
        log(f"vm-sim: {note}")
    log(f"vm-sim: {scn.name}: {model!r}, {scn.integrator}, dt={scn.dt:g} s, "
        f"duration={scn.duration:g} s, controller={run.ctrl_name or 'none'}"
        + (", prescribed joint motion" if scn.prescribed else ""))
    try:
        # imports (rosbags' message classes) and files: a Ctrl-C is taken after them (see
        # _main: an interrupt inside an exec() of a dataclass would make the process die by
        # SIGINT at exit instead of exiting with 130)
        from ..core.signals import deferred_interrupts
        with deferred_interrupts(raise_after=True):
            run.recorder = _open_recorder(run)
            # what a killed run leaves beside its recording: finished = false
            _write_summary(run.out, dict(_base_summary(run, None, 0.0, None, False),
                                         finished=False, files=["trajectory.mcap",
                                                                "summary.json"]))
        if run.record_every > 1:
            log(f"vm-sim: {run.scn.duration / run.scn.dt:.0f} steps: the summary and plots use "
                f"one sample in {run.record_every}; trajectory.mcap gets every sample")
        traj, wall, diverged, interrupted = _simulate(run, log)
    except BaseException:
        if run.recorder is not None:            # keep the samples recorded so far
            try:
                run.recorder.close()
            except ValueError:                  # none: the run never started, leave nothing
                with contextlib.suppress(OSError):
                    (run.out / "summary.json").unlink()
            except OSError:
                pass
        raise
    if diverged is not None:
        log(f"vm-sim: diverged at t = {diverged['t']:.6g} s ({diverged['reason']}); "
            f"reduce dt or the gains")
    with _DeferredInterrupt(log, exiting=interrupted) as stop:
        try:
            summary = _write_outputs(run, traj, wall, diverged, interrupted, stop, log)
        finally:        # also when an output cannot be written: the recording is finished
            with contextlib.suppress(ValueError, OSError):
                run.recorder.close()
    return summary


def _open_recorder(run):
    """The streaming MCAP recorder of ``trajectory.mcap`` (written in place, readable after
    every chunk: a killed run keeps its samples), and the in-memory sampling of the run."""
    from ..ros.recording import McapRecorder
    scn, model = run.scn, run.scn.model
    steps = math.ceil(scn.duration / scn.dt - 1e-9)
    # the Euler-angle comparison integrates on the kept samples' grid: keep them all
    if not scn.params.get("compare_euler_model"):
        run.record_every = max(1, math.ceil(steps / MAX_KEPT_SAMPLES))
    return McapRecorder(run.out / "trajectory.mcap", model.joint_names,
                        robot_description=scn.robot_description, base_iota=model.group.iota,
                        rate_hz=run.record_rate if run.record_rate > 0 else None)


def _base_summary(run, traj, wall, diverged, interrupted):
    scn, model = run.scn, run.scn.model
    sim_time = float(traj.t[-1] - traj.t[0]) if traj is not None else 0.0
    s = {
        "scenario": scn.name,
        "description": scn.description,
        "base_type": model.base_type,
        "joints": model.joint_names,
        "integrator": scn.integrator,
        "controller": run.ctrl_name,
        "controller_parameters": dict(getattr(run.ctrl, "params", {}) or {}) or None,
        "dt": scn.dt,
        "duration": scn.duration,
        "simulated_time": sim_time,
        "steps": int(round(sim_time / scn.dt)) if traj is not None else 0,
        "samples_kept_every": run.record_every,
        "wall_time_s": wall,
        "real_time_factor": sim_time / wall if wall > 0 else None,
        "recording_time_s": run.recording_time,
        "setup_time_s": run.setup_time,
        "interrupted": interrupted,
        "diverged": diverged is not None,
        "finished": True,       # False: killed while running, or an output could not be written
    }
    if diverged is not None:
        s["divergence"] = {"t": diverged["t"], "reason": diverged["reason"],
                           "message": f"diverged at t = {diverged['t']:.6g} s "
                                      f"({diverged['reason']}); reduce dt or the gains"}
    if traj is not None:
        s["final_state"] = {
            "base_position": traj.g[-1, :3, 3].tolist(),
            "base_rotation_vector": _rotvec(traj.g[-1]).tolist(),
            "base_twist": traj.V[-1].tolist(),
            "joint_positions": traj.q[-1].tolist(),
            "joint_velocities": traj.qd[-1].tolist(),
        }
    return s


def _write_summary(out: Path, summary: dict) -> None:
    from ..analysis.plotting import write_bytes_nofollow
    from .summary import to_jsonable
    text = json.dumps(to_jsonable(summary), indent=2, allow_nan=False) + "\n"
    try:
        write_bytes_nofollow(out / "summary.json", text.encode())
    except OSError as exc:      # name the file (a full disk fails inside a temporary file)
        raise OSError(exc.errno, exc.strerror or str(exc), str(out / "summary.json")) from None


def _write_outputs(run, traj, wall, diverged, interrupted, stop, log):
    from ..analysis import metrics as analysis
    scn, model, out = run.scn, run.scn.model, run.out
    summary = _base_summary(run, traj, wall, diverged, interrupted)
    summary["files"] = ["summary.json"]
    if run.write_error is not None:
        summary["finished"] = False
        summary["write_error"] = str(run.write_error)
    _write_summary(out, summary)              # first, so that nothing can lose it
    if traj is None:
        if run.recorder is not None:
            run.recorder.abort()
        log(f"vm-sim: no samples to write; wrote summary.json to {out}/")
        return summary

    with _phase(log, "energy and momentum balance"):
        frame_fn = None
        if any(e.acts_on_frames for e in scn.forces):
            def frame_fn(t, state):
                return scn.environment_wrenches(t, state)[1]
        checks = analysis.conservation_checks(model, traj, frame_fn)
    summary.update(checks.summary())
    ref_joint = getattr(run.reference, "joint", None) if run.ctrl is not None else None
    err = None
    if ref_joint is not None:
        err, final, rms = analysis.tracking_errors(traj.t, traj.q, ref_joint)
        summary["tracking_error_final"] = final
        summary["tracking_error_rms"] = rms
    if scn.prescribed is not None and scn.prescribed.kind == "wheel_loop":
        summary["attitude_change_per_cycle"] = analysis.attitude_changes_deg(
            traj.t, traj.g, scn.prescribed.period)
    euler = None
    if scn.params.get("compare_euler_model") and model.b == 6 and len(traj) > 1 \
            and not stop.requested:
        from ..analysis.euler_model import compare_with_lp
        with _phase(log, "ZYX Euler-angle model run for comparison (Ctrl-C skips it)"), \
                stop.interruptible():
            euler = compare_with_lp(model, traj)
    if euler is not None:
        summary["euler_angle_model"] = {k: v for k, v in euler.items() if k != "euler_trajectory"}
        log(f"vm-sim: ZYX Euler-angle model: {_plain_status(euler['euler_status'])}; pitch came "
            f"within {euler['closest_to_gimbal_lock_deg']:.3g} deg of 90; Euler energy error "
            f"{_fmt(euler['euler_energy_drift_rel'])} vs LP {_fmt(euler['lp_energy_drift_rel'])}")
    _write_summary(out, summary)

    with _phase(log, "closing trajectory.mcap"):
        try:
            info = run.recorder.close()
        except OSError as exc:      # the disk filled up at the end: the chunks written stay
            run.write_error = exc
            info = run.recorder.close()
    summary["recording"] = {"file": "trajectory.mcap",
                            "messages": getattr(info, "message_counts", None)}
    if getattr(info, "error", None):
        summary["recording"]["samples"] = len(info.indices)
        summary["recording"]["error"] = info.error
        summary["finished"] = False
        summary["write_error"] = info.error
    summary["files"] = ["trajectory.mcap", "summary.json"]
    _write_summary(out, summary)
    if run.write_error is not None:         # no plots on a full disk
        log(f"vm-sim: wrote {', '.join(summary['files'])} to {out}/")
        return summary

    if run.plots and len(traj) > 1:
        with _phase(log, "plotting"):
            written = _plots(run, traj, checks, err, euler, stop)
        summary["files"] += written
        if stop.requested:
            summary["plots_skipped"] = True
    _write_summary(out, summary)

    state = ("DIVERGED after" if diverged else "INTERRUPTED after" if interrupted else "done")
    rtf = summary["real_time_factor"]
    log(f"vm-sim: {state} {summary['simulated_time']:.3f} s simulated in {wall:.2f} s "
        f"(real-time factor {_fmt(rtf, '.2f')}); energy balance "
        f"{_fmt(summary.get('energy_balance_rel'))}, energy drift "
        f"{_fmt(summary.get('energy_drift_rel'))}, momentum drift "
        f"{_fmt(summary.get('momentum_drift_rel'))}"
        + (f", tracking error final {summary['tracking_error_final']:.2e}"
           if err is not None else ""))
    log(f"vm-sim: wrote {', '.join(summary['files'])} to {out}/")
    return summary


def _plots(run, traj, checks, err, euler, stop) -> list:
    """Write the PNG plots (stopping early if ``stop.requested``); returns the names written."""
    from ..analysis import plotting
    scn, model, out = run.scn, run.scn.model, run.out
    tag = (f"{scn.name} · controller {run.ctrl_name or 'none'} · {scn.integrator}, "
           f"dt = {scn.dt:g} s")
    units = ["m" if k == "prismatic" else "rad" for k in _joint_kinds(model)]
    figures = [("joints.png", lambda: plotting.joints_figure(
        traj.t, traj.q, model.joint_names, title=f"{tag}\njoint positions", units=units))]
    if model.b:
        figures.append(("base.png", lambda: plotting.base_figure(
            traj.t, traj.g, model.base_type, title=f"{tag}\nvehicle pose ({model.base_type})")))
    figures.append(("conservation.png", lambda: plotting.energy_figure(
        traj.t, checks.balance, checks.energy_scale, work_done=not checks.energy_conserved,
        momentum_change=checks.momentum_change if checks.momentum_change is not None else None,
        momentum_scale=checks.momentum_scale, momentum_conserved=checks.momentum_conserved,
        title=f"{tag}\n" + ("energy drift (no input does work)" if checks.energy_conserved
                            else "energy balance E − E₀ − W (W: work of efforts and wrenches)"))))
    if err is not None:
        figures.append(("tracking.png", lambda: plotting.tracking_figure(
            traj.t, err, model.joint_names, title=f"{tag}\njoint tracking error", units=units)))
    if euler is not None:
        figures.append(("euler_comparison.png", lambda: _euler_figure(traj, checks, euler, tag)))
    written = []
    for name, make in figures:
        if stop.requested:
            break
        plotting.save_figure(make(), out / name)
        written.append(name)
    return written


def _joint_kinds(model):
    kinds = getattr(model, "joint_types", None)
    if kinds is None or len(kinds) != model.n:
        return ["revolute"] * model.n
    return list(kinds)


def _plain_status(status: str) -> str:
    """The Euler model's status without raw exception tuples such as
    ``(34, 'Numerical result out of range')`` (an ``OverflowError`` from ``math``)."""
    s = re.sub(r":?\s*\(\d+, '([^']*)'\)", lambda m: f" ({m.group(1).lower()})", str(status))
    s = re.sub(r":\s*\w+: entries must not exceed [^,]*, got (\S+)$",
               r" (the state reached \1: overflow)", s)
    return s.replace("numerical result out of range", "floating-point overflow")


def _euler_figure(traj, checks, euler, tag):
    """LP vs ZYX Euler-angle model: pitch, energy error, mass-matrix conditioning."""
    import numpy as np

    from ..analysis import plotting
    from ..analysis.plotting import add_legend, finish_figure, new_figure

    @plotting.styled
    def make():
        et = euler["euler_trajectory"]
        pitch = np.degrees(np.arcsin(np.clip(-traj.g[:, 2, 0], -1.0, 1.0)))
        fig, ax = new_figure(3, 2.2)
        ax[0].plot(traj.t, pitch, color="k", label="pitch θ (LP state)")
        for y in (90, -90):
            ax[0].axhline(y, ls=":", color="grey")
        ax[0].set_ylabel("ZYX pitch θ [deg]")
        add_legend(ax[0], 1)
        lp_err = np.abs(checks.balance) / checks.energy_scale
        ax[1].semilogy(traj.t, np.maximum(lp_err, 1e-17), label="Lagrange–Poincaré (RKMK4)")
        ax[1].semilogy(et["t"], np.maximum(et["energy_error_rel"], 1e-17),
                       label="ZYX Euler angles (RK4)")
        ax[1].set_ylabel(r"$|E - E_0|\,/\,E_\mathrm{ref}$")
        ax[1].set_ylim(1e-18, 1e3)
        add_legend(ax[1], 2)
        ax[2].semilogy(et["t"], et["condition_number"], color="C1", label="cond(M_Euler)")
        ax[2].set_ylabel("condition number")
        add_legend(ax[2], 1)
        return finish_figure(fig, ax, traj.t,
                       f"{tag}\nEuler-angle model: {_plain_status(euler['euler_status'])}")
    return make()


def _rotvec(g):
    from ..core.lie import so3_log
    return so3_log(g[:3, :3])


def _fmt(x, spec=".2e"):
    return "n/a" if x is None else format(x, spec)


# ----------------------------------------------------------------------------- main
def _log(message: str) -> None:
    print(message, flush=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except KeyboardInterrupt:      # during start-up (imports, model loading, checks)
        signal.signal(signal.SIGINT, signal.SIG_IGN)     # a second Ctrl-C while exiting
        print("vm-sim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv) -> int:
    try:
        args = _parser().parse_args(argv)
        from ..config.scenario import list_scenarios, load_scenario
        from ..core.signals import deferred_interrupts
        if args.list:
            for name, desc in list_scenarios():
                print(f"{name:18s} {desc}")
            return EXIT_OK
        if not args.scenario:
            raise UsageError("missing SCENARIO (see vm-sim --list)")
        overrides = _overrides(args)
        explicit = {k.split(".", 1)[1] for k in overrides if k.startswith("controller.")}
        if args.controller is not None and "controller.name" in overrides \
                and overrides["controller.name"] != args.controller:
            raise UsageError(f"--controller {args.controller!r} contradicts -p controller.name:="
                             f"{overrides['controller.name']!r}; give one")
        explicit.discard("name")
        print(f"vm-sim: loading {args.scenario} ...", flush=True)
        # loading may load compiled kernels (numba/llvmlite call back into Python from C,
        # where a KeyboardInterrupt is swallowed or makes the interpreter die by SIGINT at
        # exit): a Ctrl-C is recorded and ends vm-sim (130) once loading is over
        with deferred_interrupts(raise_after=True):
            try:
                scn = load_scenario(args.scenario, overrides)
                run = prepare_run(scn, args.controller, args.out, args.record_rate,
                                  not args.no_plots, not args.quiet and sys.stderr.isatty(),
                                  explicit, args.force)
            except ValueError as exc:
                raise UsageError(str(exc).splitlines()[0]) from None
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        hooks, live, frames = _view_hooks(scn, args)
    except UsageError as exc:
        print(f"vm-sim: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    run.hooks = hooks
    try:
        summary = execute_run(run, log=_log)
    except OSError as exc:      # an output could not be written: one line, what was kept
        print(f"vm-sim: error: {_write_error_line(exc, run)}", file=sys.stderr)
        if live is not None:
            live.viewer.stop()
        return EXIT_WRITE_ERROR
    try:
        if frames is not None and not summary.get("interrupted"):
            from ..viewer.video import write_video
            write_video(args.video, frames.playback(), title=scn.name)
            print(f"vm-sim: wrote {args.video}")
        if live is not None and not summary.get("interrupted"):
            try:
                live.finish()
                print(f"vm-sim: replay at {live.viewer.url}  (Ctrl-C to quit)", flush=True)
                live.viewer.wait()
            except KeyboardInterrupt:   # also when Ctrl-C comes before wait() has started
                pass
    finally:
        if live is not None:
            live.viewer.stop()
    if summary.get("write_error"):
        print(f"vm-sim: error: {summary['write_error']}", file=sys.stderr)
        return EXIT_WRITE_ERROR
    if summary.get("diverged"):
        print(f"vm-sim: error: {summary['divergence']['message']}", file=sys.stderr)
        return EXIT_DIVERGED
    if summary.get("interrupted"):
        return EXIT_INTERRUPTED
    return EXIT_OK


def _write_error_line(exc: OSError, run) -> str:
    """One line for a failed write: the file, the reason and what trajectory.mcap keeps."""
    from ..ros.recording import RecordingError
    if isinstance(exc, RecordingError):
        return str(exc)
    what = f"cannot write {exc.filename or run.out}: {exc.strerror or exc}"
    rec = run.recorder
    error = getattr(rec, "error", None)
    if error is not None:
        return f"{what}; trajectory.mcap: {str(error).split('; ', 1)[-1]}"
    kept = getattr(rec, "samples_on_disk", (0, None))
    if rec is not None and kept[0]:
        what += f"; trajectory.mcap keeps {kept[0]} samples up to t = {kept[1]:.6g} s, readable"
    return what


def _view_hooks(scn, args):
    """The ``--view`` / ``--video`` per-sample hooks: (hooks, LiveView or None,
    FrameCollector or None).  A missing viewer dependency is a UsageError naming the extra."""
    hooks, live, frames = [], None, None
    if not (args.view or args.video):
        return hooks, live, frames
    if args.video:
        from pathlib import Path as _P
        if _P(args.video).suffix.lower() not in (".mp4", ".gif"):
            raise UsageError(f"--video: {args.video!r} must end with .mp4 or .gif")
        if _P(args.video).is_dir():
            raise UsageError(f"--video: {args.video!r} is a directory")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}")
    try:
        from ..viewer import live as _live
        if args.video:
            import matplotlib  # noqa: F401
            if args.video.lower().endswith(".mp4"):
                import imageio_ffmpeg  # noqa: F401
            from ..viewer.video import VIDEO_DEFAULTS
            fps = VIDEO_DEFAULTS[_P(args.video).suffix.lower()][0]
            frames = _live.FrameCollector(scn.robot_description, scn.model.joint_names, fps=fps)
            hooks.append(frames)
        if args.view:
            from ..viewer.server import RobotViewer
            viewer = RobotViewer(scn.robot_description, host=args.host, port=args.port,
                                 title=f"vm-sim {scn.name}", base_dir=scn.urdf_path.parent)
            live = _live.LiveView(viewer, scn.model.joint_names)
            hooks.append(live)
            print(f"vm-sim: live view at {viewer.url}  (open it in a browser)", flush=True)
    except ImportError as exc:
        from ..viewer import missing_extra
        raise UsageError(missing_extra(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(f"--view/--video: {str(exc).splitlines()[0]}") from None
    return hooks, live, frames


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
