"""vm_dynamics.analysis.plotting: figures are returned as matplotlib Figures, show only what the vehicle
group moves, label the energy balance honestly, and are saved without following symlinks."""
import numpy as np
import pytest
from matplotlib.figure import Figure  # noqa: E402

from vm_dynamics.analysis import plotting  # noqa: E402
from vm_dynamics.core import lie

t = np.linspace(0.0, 1.0, 51)


def _poses(axes_moved):
    g = np.repeat(np.eye(4)[None], t.size, axis=0)
    for k, tk in enumerate(t):
        V = np.zeros(6)
        V[list(axes_moved)] = tk
        g[k] = lie.se3_exp(V)
    return g


def _labels(ax):
    return [h.get_label() for h in ax.get_legend().legend_handles] if ax.get_legend() else []


@pytest.mark.parametrize("base, rows, position, rotation", [
    ("SE3", 2, ["x", "y", "z"], [r"$\varphi_x$", r"$\varphi_y$", r"$\varphi_z$"]),
    ("SE2", 2, ["x", "y"], [r"$\varphi_z$"]),
    ("SO3", 1, None, [r"$\varphi_x$", r"$\varphi_y$", r"$\varphi_z$"]),
])
def test_base_figure_plots_only_the_coordinates_of_the_group(base, rows, position, rotation):
    fig = plotting.base_figure(t, _poses((0, 1, 5)), base, title="x")
    assert isinstance(fig, Figure) and len(fig.axes) == rows
    if position:
        assert _labels(fig.axes[0]) == position
    assert _labels(fig.axes[-1]) == rotation
    fig.canvas.draw()
    for ax in fig.axes:          # legends inside the axes
        leg, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert box.x0 <= leg.x0 and leg.x1 <= box.x1 and box.y0 <= leg.y0 and leg.y1 <= box.y1
    with pytest.raises(ValueError, match="^base_type: a fixed base"):
        plotting.base_figure(t, _poses(()), "fixed")


def test_energy_figure_says_balance_or_drift_and_states_the_scale():
    bal = 1e-12 * np.sin(t)
    fig = plotting.energy_figure(t, bal, 2.5, work_done=True, title="T")
    assert "energy balance" in _labels(fig.axes[0])[0]
    assert "2.5 J" in fig.axes[0].get_ylabel()
    fig = plotting.energy_figure(t, bal, 2.5, work_done=False, momentum_change=bal,
                                 momentum_scale=3.0, momentum_conserved=True)
    assert "energy drift, no work done" in _labels(fig.axes[0])[0]
    assert "conserved momentum" in _labels(fig.axes[1])[0] and len(fig.axes) == 2
    with pytest.raises(ValueError, match="^scale: "):
        plotting.energy_figure(t, bal, 0.0)


def test_joint_and_tracking_figures_and_their_argument_checks():
    q = np.c_[np.sin(t), np.cos(t)]
    fig = plotting.joints_figure(t, q, ["a", "b"], units=["rad", "m"])
    assert isinstance(fig, Figure) and _labels(fig.axes[0]) == ["a [rad]", "b [m]"]
    fig = plotting.tracking_figure(t, 1e-3 * q, ["a", "b"])
    assert _labels(fig.axes[0])[0].startswith("a (RMS ")
    with pytest.raises(ValueError, match="^q: 2 columns but 3 names"):
        plotting.joints_figure(t, q, ["a", "b", "c"])


def test_save_figure_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "plot.png"
    link.symlink_to(victim)
    plotting.save_figure(plotting.joints_figure(t, np.c_[t], ["a"]), link)
    assert victim.read_text() == "precious"
    assert not link.is_symlink() and link.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png", "victim.txt"]


def test_rotation_vector_unwrapping_is_continuous():
    """The principal log jumps by 2π at θ = π; the unwrapped rotation vector follows the
    angle continuously (a z rotation swept to 2.5π)."""
    from vm_dynamics.core.rotations import rotvec_from_matrix
    angles = np.linspace(0, 2.5 * np.pi, 400)
    c, s = np.cos(angles), np.sin(angles)
    R = np.zeros((len(angles), 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = c, -s, s, c, 1.0
    phi = rotvec_from_matrix(R)
    assert np.max(np.abs(np.diff(phi[:, 2]))) > np.pi
    np.testing.assert_allclose(plotting.unwrap_rotvec(phi)[:, 2], angles, atol=1e-9)
