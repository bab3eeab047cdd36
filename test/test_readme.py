"""The README's Python examples run as written (from the repository root)."""
import os
import re

import numpy as np
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_python_examples_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(REPO)
    namespace = {}
    exec(compile("\n".join(blocks), "README.md", "exec"), namespace)   # noqa: S102
    traj = namespace["traj"]
    assert traj.q.shape == (6001, namespace["model"].nq)
    assert os.path.isfile(REPO / "docs" / "spacecraft_arm_base.png")
    # "Bring your own robot": the Panda + gripper on a 500 kg bus tracks its reference
    arm, run = namespace["arm"], namespace["run"]
    assert (arm.n, arm.n_full, arm.vehicle_link) == (8, 9, "bus")
    assert run.q.shape == (101, 8) and np.abs(run.g[-1] - run.g[0]).max() > 1e-7
    assert np.abs(run.q[-1] - run.q[0]).max() > 1e-4
