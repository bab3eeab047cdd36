"""The README's Python examples run as written (from the repository root)."""
import os
import re
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
