"""The README's Python examples run as written (from the repository root)."""
import re
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def test_readme_python_examples_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(REPO)
    namespace = {}
    exec(compile("\n".join(blocks), "README.md", "exec"), namespace)   # noqa: S102
    traj = namespace["traj"]
    assert traj.q.shape == (6001, namespace["model"].nq)
    # the plug-in example: a working controller that follows the reference with a lag
    traj_pd, ref = namespace["traj_pd"], namespace["ref"]
    assert traj_pd.q.shape == (2001, namespace["model"].nq) and not traj_pd.interrupted
    moved = np.abs(traj_pd.q[-1] - traj_pd.q[0]).max()
    assert moved > 0.05                                       # it drove the joints
    assert namespace["lag"] < 0.5 * np.abs(ref.joint(2.0)[0] - traj_pd.q[0]).max()   # follows
    # "Bring your own robot": the Panda + gripper on a 500 kg bus tracks its reference
    arm, run = namespace["arm"], namespace["run"]
    assert (arm.n, arm.n_full, arm.vehicle_link) == (8, 9, "bus")
    assert run.q.shape == (101, 8) and np.abs(run.g[-1] - run.g[0]).max() > 1e-7
    assert np.abs(run.q[-1] - run.q[0]).max() > 1e-4


def test_readme_documents_the_plugin_reference_api():
    text = (REPO / "README.md").read_text()
    for needle in ("reference.joint(t) -> (q_d, qd_d, qdd_d)", "reference.base(t) -> (g_d, V_d, "
                   "Vdot_d)", "reference.ee(t)", "vm.State(t, g, V, q, qd)",
                   "vm.pose(position, quaternion_xyzw)"):
        assert needle in text, needle


def test_every_image_the_readme_shows_is_an_image_in_the_repository():
    """Each ``![...](path)`` of the README names a PNG or GIF file of the repository, whose
    content is what its name says (a renamed or deleted figure breaks the README; the README's
    examples do not write them)."""
    signatures = {".png": b"\x89PNG\r\n\x1a\n", ".gif": b"GIF89a"}
    text = (REPO / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text)
    assert len(images) >= 3, images
    for rel in images:
        path = REPO / rel
        assert path.is_file(), f"README shows {rel}, which is not in the repository"
        magic = signatures.get(path.suffix.lower())
        assert magic is not None, f"README shows {rel}: not a .png or .gif"
        assert path.read_bytes()[:len(magic)] == magic, f"{rel} is not a {path.suffix} image"
