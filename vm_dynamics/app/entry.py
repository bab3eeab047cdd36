"""Console entry points: import the program with Ctrl-C deferred, then run it.

Importing a program (numpy, the model code, DDS or rclpy) takes a noticeable time; a Ctrl-C in
that window must not print a traceback.  The first statement of this module (the console
scripts' first import of ours after the two package ``__init__`` files, which import nothing)
replaces the SIGINT and SIGTERM actions by a recorder, before anything else is imported; each
entry point then imports its ``main`` with interrupts deferred
(:func:`vm_dynamics.core.signals.deferred_interrupts`) and exits at once, without a word, if
a signal arrived at any moment since: with 0 for the ROS nodes (as ``ros2 launch`` expects) and
130 for ``vm-sim``, ``vm-view`` and ``vm-send`` (the shell's convention for SIGINT).

A reader that closes the pipe early (``vm-sim --list | head -1``, ``grep -q``) ends the program
quietly with 141, the shell's code for SIGPIPE, as a C tool would, instead of a
``BrokenPipeError`` traceback.
"""
from __future__ import annotations

try:
    import signal
    import sys

    #: The console scripts (setup.py) whose process this module may take Ctrl-C over for.
    SCRIPTS = ("vm-sim", "vm-view", "vm-send", "vm-campaign", "vm-foxglove", "dynamics_node",
               "controller_node", "fake_arm_driver", "diff_drive_node", "composed_nodes")
    #: Signals received before the entry point's deferral took over (the first one).
    EARLY_SIGNALS: list = []

    def _record_early(signum, frame):
        if not EARLY_SIGNALS:
            EARLY_SIGNALS.append(signum)
    _record_early.deferred = True   # the stand-in mark of core.signals.deferred_interrupts
    _script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    if __name__ == "__main__" or _script.replace("\\", "/").rsplit("/", 1)[-1] in SCRIPTS:
        try:           # only in our executables: an importing program keeps its Ctrl-C
            signal.signal(signal.SIGINT, _record_early)
            signal.signal(signal.SIGTERM, _record_early)
        except ValueError:   # imported outside the main thread: nothing to defer
            pass
except KeyboardInterrupt:     # a Ctrl-C before the recorder was in place
    EARLY_SIGNALS = [2]       # SIGINT

import importlib  # noqa: E402 - after the recorder, on purpose
import os  # noqa: E402
import signal  # noqa: E402 - bound here also if a Ctrl-C cut the block above short
import sys  # noqa: E402

from ..core.signals import deferred_interrupts  # noqa: E402

__all__ = ["dynamics_node", "controller_node", "composed_nodes", "diff_drive_node",
           "fake_arm_driver", "vm_sim",
           "vm_foxglove", "vm_view", "vm_send", "vm_campaign"]


def _restore_default_actions() -> None:
    """SIGINT raises KeyboardInterrupt again and SIGTERM terminates, unless the program
    installed handlers of its own meanwhile."""
    recorder = globals().get("_record_early")
    for sig, action in ((signal.SIGINT, signal.default_int_handler),
                        (signal.SIGTERM, signal.SIG_DFL)):
        try:
            if recorder is not None and signal.getsignal(sig) is recorder:
                signal.signal(sig, action)
        except ValueError:     # not the main thread
            pass


def _run(module: str, interrupted: int) -> int:
    with deferred_interrupts() as stop:
        if not EARLY_SIGNALS:
            main = importlib.import_module(module).main
    _restore_default_actions()
    if stop or EARLY_SIGNALS:
        return interrupted
    try:
        return main()
    except BrokenPipeError:
        _silence_stdout()
        return _BROKEN_PIPE


_BROKEN_PIPE = 141  # 128 + SIGPIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout already closed or not a file
        pass


def dynamics_node() -> int:
    return _run("vm_dynamics.nodes.dynamics_node", 0)


def controller_node() -> int:
    return _run("vm_dynamics.nodes.controller_node", 0)


def composed_nodes() -> int:
    return _run("vm_dynamics.nodes.composed", 0)


def diff_drive_node() -> int:
    return _run("vm_dynamics.nodes.diff_drive_node", 0)


def fake_arm_driver() -> int:
    return _run("vm_dynamics.nodes.fake_arm_driver", 0)


def vm_foxglove() -> int:
    return _run("vm_dynamics.nodes.foxglove_bridge", 0)


#: vm-sim's arguments that print and exit without running (no recording needed).
_NO_RUN = ("-h", "--help", "--list")
_SIM_HINT = ("vm-sim: error: rosbags is not installed; vm-sim records its runs with it "
             "(trajectory.mcap). Install it with: pip install 'vm_dynamics[sim]'")


def _missing(module: str) -> bool:
    """True if ``module`` cannot be imported here (looked up, not imported)."""
    import importlib.util
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):      # a parent that is no package; a blocked module
        return True


def vm_sim() -> int:
    """``vm-sim``: a run records with rosbags, so without it one line says what to install,
    before any output directory is created (exit code 2, as for other usage errors)."""
    args = sys.argv[1:]
    if args and not any(a in _NO_RUN for a in args) and not EARLY_SIGNALS \
            and _missing("rosbags"):
        print(_SIM_HINT, file=sys.stderr)
        return 2
    return _run("vm_dynamics.app.cli", 130)


def vm_view() -> int:
    return _run("vm_dynamics.viewer.cli", 130)


def vm_send() -> int:
    return _run("vm_dynamics.app.send", 130)


def vm_campaign() -> int:
    return _run("vm_dynamics.app.campaign_cli", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(vm_sim())
