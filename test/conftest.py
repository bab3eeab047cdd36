"""Shared fixtures: robot descriptions and Pinocchio oracles.

Robots (all from the example-robot-data 6.0 package installed in the venv,
found under ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``;
the Python ``example_robot_data`` loader module is *not* installed, only the
data, so paths are resolved here):

* ``ur5``    ur_description/urdf/ur5_robot.urdf, unmodified. 6 revolute joints,
  root link ``world`` (fixed joints world->base_link, ee_link, base, tool0
  must be merged). Diagonal inertias only.
* ``panda``  panda_description/urdf/panda.urdf with the ``<mimic>`` tag of
  ``panda_finger_joint2`` removed (``strip_mimic(mode="free")``), i.e. both
  fingers are independent prismatic joints (9 joints). Pinocchio is built from
  the same stripped XML. Products of inertia; hand is a branch point; the
  second finger axis is (0,-1,0) (Pinocchio: PrismaticUnaligned).
* ``tiago``  tiago_description/robots/tiago_no_hand.urdf, unmodified.
  Branched tree with a prismatic torso lift, 2-DoF head and 7-DoF arm,
  two continuous wheel joints on the base; products of inertia; many fixed
  links (casters, sensors) to merge; contains ``<transmission>`` elements
  with nested ``<joint>`` tags and ``<gazebo>`` sensor blocks.
* ``b1_z1``  b1_description/urdf/b1-z1.urdf, unmodified: 19 revolute joints
  (quadruped legs + 6-DoF Z1 arm + gripper), products of inertia.
* ``random_tree``  synthetic URDF from ``oracles.random_tree_urdf(seed=7)``:
  rotated inertial frames (random rpy) with products of inertia, unaligned
  joint axes, negative axes, prismatic/continuous/revolute joints, massive
  fixed links to merge (on the vehicle and mid-chain), a massless spacer link,
  two branches. No example-robot-data URDF has rotated inertial frames
  without also having mimic joints, hence this one.

Meshes are never loaded (neither Pinocchio's model builder nor, presumably,
the library need them), so no mesh stripping is done.
"""

from __future__ import annotations

import functools
import glob
import os
import signal
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# test helpers: support/ (oracles, URDF generators) and fakes/ (the rclpy stand-in)
for p in (os.path.join(HERE, "support"), os.path.join(HERE, "fakes"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

#: Test kinds, one folder each; every test gets the marker of its folder
#: (``pytest -m oracle``, ``pytest -m "not process"``).
KINDS = {
    "unit": "functions and classes in-process, against closed forms and properties",
    "oracle": "dynamics against an independent oracle (Pinocchio, finite differences, "
              "conservation laws, analytic solutions)",
    "process": "executables and nodes as processes, over loopback DDS or HTTP",
    "ros": "against a ROS 2 installation (rclpy, launch) or its stand-ins",
}


def pytest_configure(config):
    for kind, text in KINDS.items():
        config.addinivalue_line("markers", f"{kind}: {text}")
    # A test run started in the background by a non-interactive shell (``cmd &``) inherits
    # SIGINT ignored, and so would every executable the tests start: the Ctrl-C tests would
    # then watch a node that (rightly, as under nohup) ignores Ctrl-C.  Catching SIGINT here
    # gives the children the default action again (exec resets caught signals, not ignored).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def signal_handlers_restored():
    """Tests that shut a transport down in-process (``shutdown_quietly`` ignores SIGINT and
    SIGTERM from then on, as an exiting node should) must not leave the test process, and every
    executable it starts later, deaf to Ctrl-C."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


#: Packages outside package.xml's rosdep keys that some test modules need: on a ROS install
#: with the rosdep keys only (``colcon test``), a module that cannot import one of them is
#: reported as skipped with this reason instead of stopping the collection.  Where every extra
#: is installed (``bash .ci/run``; ``CI`` set, or ``VM_DYNAMICS_STRICT_TESTS=1``) nothing is
#: skipped: a missing package is a failure there.
OPTIONAL_TEST_PACKAGES = {
    "rosbags": "rosbags (messages without ROS; pip install rosbags, the sim extra)",
    "mcap": "mcap (recordings; the sim extra)",
    "cyclonedds": "cyclonedds (the DDS transport; the dds extra)",
    "pinocchio": "Pinocchio (the oracle; pip install pin, the test extra)",
    "mujoco": "MuJoCo (the peer; the test extra)",
    "hypothesis": "hypothesis (property tests; the test extra)",
    "selenium": "selenium (browser tests; the test extra)",
    "viser": "viser (the viewer; the viz extra)",
    "sympy": "sympy (symbolic oracles; the test extra)",
    "matplotlib": "matplotlib (plots; the sim extra)",
}


@pytest.fixture
def fake_ros(monkeypatch):
    """The strict rclpy stand-in (``test/fakes/strict_rclpy.py``) installed as ``rclpy`` for one
    test, with ``VM_DYNAMICS_TRANSPORT=rclpy``: yields ``(fake, module)``, the stand-in's state
    (injected messages, logs, nodes) and its module (converters such as
    ``rosidl_to_rosbags``)."""
    import strict_rclpy
    monkeypatch.setenv("VM_DYNAMICS_TRANSPORT", "rclpy")
    fake = strict_rclpy.install()
    yield fake, strict_rclpy
    strict_rclpy.uninstall()


def _strict() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("VM_DYNAMICS_STRICT_TESTS") == "1"


@pytest.hookimpl(hookwrapper=True)      # old-style: also pytest 7 (Jazzy's colcon test)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.failed and isinstance(collector, pytest.Module) and not _strict():
        text = str(report.longrepr)
        for name, what in OPTIONAL_TEST_PACKAGES.items():
            if f"No module named '{name}" in text or f"{name} is needed" in text:
                report.outcome = "skipped"
                report.longrepr = (str(collector.path), 0,
                                   f"Skipped: needs {what}, not installed here")
                break


@pytest.hookimpl(hookwrapper=True)
def pytest_pycollect_makemodule(module_path, parent):
    """launch_testing's pytest plugin (installed with ROS 2) imports every test module itself to
    look for a launch test, so a missing optional package stops the collection there, before
    :func:`pytest_make_collect_report` sees it: hand pytest a plain module instead, whose
    import then fails where that hook reports it as skipped."""
    outcome = yield
    exc = outcome.excinfo[1] if outcome.excinfo else None
    if isinstance(exc, ImportError) and not _strict() and _missing_optional(exc):
        outcome.force_result(pytest.Module.from_parent(parent, path=module_path))


def _missing_optional(exc: BaseException) -> str | None:
    """The optional package whose absence caused ``exc`` (or its causes), or None."""
    while exc is not None:
        if isinstance(exc, ModuleNotFoundError):
            root = (exc.name or "").split(".")[0]
            if root in OPTIONAL_TEST_PACKAGES:
                return root
        exc = exc.__cause__ or exc.__context__
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        kind = os.path.basename(os.path.dirname(str(item.fspath)))
        if kind in KINDS:
            item.add_marker(getattr(pytest.mark, kind))



def erd_robots_dir():
    """Directory holding example-robot-data's ``robots/`` tree."""
    try:  # the Python loader module, if some day installed
        import example_robot_data as erd  # type: ignore

        d = os.path.join(os.path.dirname(erd.getModelPath("ur5_robot.urdf")), "robots")
        if os.path.isdir(d):
            return d
    except Exception:
        pass
    for sp in sys.path:
        d = os.path.join(sp, "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    hits = glob.glob(os.path.join(sys.prefix, "**", "example-robot-data", "robots"), recursive=True)
    if hits:
        return hits[0]
    raise RuntimeError("example-robot-data robots directory not found")


ROBOT_FILES = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "tiago": "tiago_description/robots/tiago_no_hand.urdf",
    "b1_z1": "b1_description/urdf/b1-z1.urdf",
}

# frames to which external wrenches are applied (end effectors, a link merged by a
# fixed joint, a second branch, the vehicle itself)
WRENCH_FRAMES = {
    "ur5": ["tool0", "wrist_2_link"],
    "panda": ["panda_hand_tcp", "panda_leftfinger", "panda_link4"],
    "tiago": ["arm_tool_link", "head_2_link", "base_link"],
    "b1_z1": ["gripperMover", "link06", "FL_foot", "trunk"],
    "random_tree": ["tool_link", "camera_link", "vehicle", "upper_arm_cover"],
}


def robot_path(name):
    return os.path.join(erd_robots_dir(), ROBOT_FILES[name])


@functools.lru_cache(maxsize=None)
def robot_xml(name):
    import oracles  # Pinocchio: only where an oracle is needed
    """URDF XML string for a named test robot (after the documented modifications)."""
    if name == "random_tree":
        return oracles.random_tree_urdf(seed=7)
    xml = oracles.read_urdf(robot_path(name))
    if name == "panda":
        xml, touched = oracles.strip_mimic(xml, mode="free")
        assert touched == ["panda_finger_joint2"], touched
    return xml


def gravity_for(seed):
    """Seed 0: standard gravity; other seeds: a tilted gravity vector (|g| ~ 9.81)."""
    if seed == 0:
        return (0.0, 0.0, -9.81)
    rng = np.random.default_rng(1000 + seed)
    d = np.array([0.0, 0.0, -1.0]) + 0.3 * rng.normal(size=3)
    return tuple(9.81 * d / np.linalg.norm(d))


@functools.lru_cache(maxsize=None)
def our_model(name, base, gravity):
    import vm_dynamics as vm
    return vm.load_model(robot_xml(name), base=base, gravity=gravity)


def make_oracle(name, base, gravity, joint_names=None):
    import oracles  # Pinocchio: only where an oracle is needed
    return oracles.PinocchioOracle(robot_xml(name), base=base, gravity=gravity, joint_names=joint_names)


@pytest.fixture(scope="session")
def robots_dir():
    return erd_robots_dir()
