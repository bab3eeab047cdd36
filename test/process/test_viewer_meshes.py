"""Seeing your own robot: a robot whose URDF names its meshes with ``package://`` (the shipped
``panda_on_bus``, example-robot-data's Panda) is drawn with its meshes by the viewer and the
videos, found by the same resolver as the URDF loader's; a mesh that cannot be drawn (not
found, or COLLADA without pycollada) gives one warning line and the link's collision shapes;
videos frame the robot and its path, wherever the vehicle is."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from vm_dynamics.config.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable

#: Makes the listed modules unimportable in a child interpreter, as if not installed (an
#: ``import`` raises ImportError; ``importlib.util.find_spec`` callers such as trimesh's
#: optional-dependency checks keep working).
BLOCK = "import sys\nsys.modules.update(dict.fromkeys({blocked!r}))\n"

MISSING_MESH_URDF = """<robot name="r">
  <link name="base_link">
    <visual><geometry><mesh filename="package://no_such_pkg/meshes/base.stl"/></geometry></visual>
    <collision><geometry><box size="0.4 0.3 0.2"/></geometry></collision>
    <inertial><mass value="5"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="j1" type="revolute"><parent link="base_link"/><child link="arm"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <link name="arm">
    <visual><geometry><mesh filename="package://no_such_pkg/meshes/arm.dae"/></geometry></visual>
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
</robot>
"""


def panda():
    try:
        return load_scenario("panda_on_bus")
    except ValueError as exc:
        pytest.skip(f"panda_on_bus needs example-robot-data: {exc}")


def test_panda_meshes_are_found_where_the_loader_finds_the_urdf():
    from vm_dynamics.model.packages import resolve_package_path
    from vm_dynamics.viewer.scene import urdf_visuals
    scn = panda()
    visuals, warnings = urdf_visuals(scn.robot_description)
    assert warnings == []
    meshes = {v.link: v.mesh for v in visuals if v.kind == "mesh"}
    assert {f"panda_link{k}" for k in range(8)} | {"panda_hand", "panda_leftfinger"} <= set(meshes)
    share = Path(resolve_package_path(scn.params["robot_description_file"])).parents[1]
    assert all(Path(m).is_relative_to(share) and m.endswith(".dae") for m in meshes.values())


def run_py(code, blocked=(), timeout=180, env=None):
    src = BLOCK.format(blocked=sorted(blocked)) + code
    return subprocess.run([PY, "-c", src], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def test_without_pycollada_the_viewer_draws_the_collision_meshes_with_one_warning(tmp_path):
    """``ROS_PACKAGE_PATH`` set or not, a DAE visual without pycollada is no ImportError: the
    viewer serves the robot with its collision meshes (STL) and says so once."""
    pytest.importorskip("viser")
    scn = panda()
    share = Path(scn.urdf_path).parents[3]           # .../share/example-robot-data/..
    env = dict(os.environ, ROS_PACKAGE_PATH=str(share.parent))
    code = ("from vm_dynamics.config.scenario import load_scenario\n"
            "from vm_dynamics.viewer.server import RobotViewer\n"
            "from vm_dynamics.viewer.video import link_polygons\n"
            "scn = load_scenario('panda_on_bus')\n"
            "v = RobotViewer(scn.robot_description, port=0)\n"
            "v.stop()\n"
            "polys, warnings = link_polygons(scn.robot_description)\n"
            "print(len(v.warnings), len(warnings), sorted(polys))\n"
            "print(v.warnings[0])\n")
    p = run_py(code, blocked=("collada",), env=env)
    assert p.returncode == 0, p.stderr
    counts, warning = p.stdout.splitlines()[:2]
    assert counts.startswith("1 1 ") and "panda_link7" in counts and "panda_hand" in counts
    assert "pycollada" in warning and "collision shapes instead" in warning
    assert "panda_link0" in warning


def test_a_missing_mesh_is_one_warning_and_the_collision_box_is_drawn():
    from vm_dynamics.viewer.scene import urdf_visuals
    visuals, warnings = urdf_visuals(MISSING_MESH_URDF)
    assert [(v.link, v.kind) for v in visuals] == [("base_link", "box")]
    assert len(warnings) == 1
    w = warnings[0]
    assert w.startswith("2 visuals cannot be drawn") and "not found" in w and "no_such_pkg" in w
    assert "collision shapes instead: links base_link" in w and "not drawn: links arm" in w


def write_missing_mesh_scenario(tmp_path) -> Path:
    (tmp_path / "r.urdf").write_text(MISSING_MESH_URDF)
    (tmp_path / "r.yaml").write_text(
        "/**:\n  ros__parameters:\n    scenario: r\n"
        f"    robot_description_file: {tmp_path / 'r.urdf'}\n"
        "    base_type: SE3\n    gravity: [0.0, 0.0, 0.0]\n    duration: 0.2\n    dt: 0.01\n")
    return tmp_path / "r.yaml"


def test_vm_view_ros_warns_about_meshes_it_cannot_draw(tmp_path):
    pytest.importorskip("viser")
    pytest.importorskip("cyclonedds")
    scn_file = write_missing_mesh_scenario(tmp_path)
    env = dict(os.environ, VM_DYNAMICS_TRANSPORT="dds", PYTHONUNBUFFERED="1")
    p = subprocess.Popen([PY, "-m", "vm_dynamics.viewer.cli", "--ros", str(scn_file),
                          "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 120
        for line in p.stdout:
            if "following" in line or time.monotonic() > deadline:
                break
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert p.returncode == 0, err
    assert len(lines) == 1 and lines[0].startswith("vm-view: warning: 2 visuals cannot be drawn")


# ---------------------------------------------------------------------------------- videos

def drawn_box(frame: np.ndarray, top_skip: float = 0.1):
    """Bounding box (x0, y0, x1, y1) in fractions of the frame of what is not background,
    below the title line."""
    h, w, _ = frame.shape
    mask = (frame < 235).any(axis=2)
    mask[: int(top_skip * h)] = False
    ys, xs = np.nonzero(mask)
    return xs.min() / w, ys.min() / h, (xs.max() + 1) / w, (ys.max() + 1) / h


def uvms_playback(n=11):
    """uvms (vehicle 10 m below the inertial origin) moving 1 m sideways while the arm turns."""
    from vm_dynamics.viewer.scene import PlaybackBuilder
    scn = load_scenario("uvms")
    b = PlaybackBuilder(scn.robot_description, scn.model.joint_names, max_rate=None)
    for k, s in enumerate(np.linspace(0.0, 1.0, n)):
        g = np.array(scn.g0, dtype=float)
        g[0, 3] += s
        b.add(0.1 * k, g, np.array(scn.q0) + s * np.array([1.0, 0.5, -0.5, 0.3]))
    return b.playback()


def test_a_video_frames_the_robot_and_its_path_not_the_inertial_origin():
    """``vm-sim uvms --video``: the vehicle is 10 m below the inertial origin.  The robot
    fills the frame (not a speck at an edge) and nothing of it is cut off."""
    pytest.importorskip("matplotlib")
    from vm_dynamics.viewer.video import render_frames
    pb = uvms_playback()
    frames = list(render_frames(pb, fps=5, size=(440, 330)))
    for f in (frames[0], frames[-1]):
        x0, y0, x1, y1 = drawn_box(f)
        assert x0 > 0.01 and x1 < 0.99 and y1 < 0.99, (x0, y0, x1, y1)   # nothing cut off
        assert max(x1 - x0, y1 - y0) > 0.45, (x0, y0, x1, y1)           # the robot is big
        cx, cy = 0.5 * (x0 + x1), 0.5 * (y0 + y1)
        assert abs(cx - 0.5) < 0.25 and abs(cy - 0.5) < 0.25, (cx, cy)


def test_a_video_of_the_panda_draws_its_meshes_and_warns_once_when_it_cannot():
    pytest.importorskip("matplotlib")
    pytest.importorskip("trimesh")
    from vm_dynamics.viewer.scene import PlaybackBuilder
    from vm_dynamics.viewer.video import link_polygons, render_frames
    scn = panda()
    polys, warnings = link_polygons(scn.robot_description)
    assert warnings == [] and len(polys["panda_link3"]) > 50     # a mesh, not a box
    b = PlaybackBuilder(scn.robot_description, scn.model.joint_names, max_rate=None)
    b.add(0.0, scn.g0, scn.q0)
    got = []
    frame = next(render_frames(b.playback(), size=(320, 240), warn=got.append))
    assert got == []
    x0, y0, x1, y1 = drawn_box(frame)
    assert max(x1 - x0, y1 - y0) > 0.4
    # a robot whose meshes are missing: the collision box is drawn, one warning
    from vm_dynamics.ros.urdf_tf import UrdfTree
    tree = UrdfTree(MISSING_MESH_URDF)
    b = PlaybackBuilder(tree.xml, ["j1"], max_rate=None)
    b.add(0.0, np.eye(4), [0.0])
    frame = next(render_frames(b.playback(), size=(320, 240), warn=got.append))
    assert len(got) == 1 and "2 visuals cannot be drawn" in got[0]
    assert (frame < 235).any(axis=2).mean() > 0.05
