"""The controller registry: built-ins (entry points and in-code fallback) and third-party plug-ins
discovered through the ``vm_dynamics.controllers`` entry-point group of a distribution created
on the fly (a ``*.dist-info`` with ``entry_points.txt`` on ``sys.path``)."""
import ast
import os
import textwrap

import numpy as np
import pytest
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.control import (
    BUILTIN_CONTROLLERS,
    ENTRY_POINT_GROUP,
    ComputedTorqueController,
    Controller,
    JointSetpoint,
    PDGravityController,
    Reference,
    TaskSpaceController,
    available_controllers,
    get_controller,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLUGIN = '''
import numpy as np
from vm_dynamics.control import Controller
from vm_dynamics.control.references import as_reference


class MyController(Controller):
    """Model-free joint PD: tau = kp (q_d - q) - kd qd (a third-party example)."""

    name = "my_ctrl"
    PARAMS = {"kp": 100.0, "kd": 20.0}

    def _reset(self, model, state):
        self.q_hold = np.array(state.q, dtype=float)

    def compute(self, t, state, reference):
        model = self._require_reset()
        ref = as_reference(reference)
        q_d = self.q_hold if ref.joint is None else ref.joint(t)[0]
        tau = self.params["kp"] * (q_d - state.q) - self.params["kd"] * state.qd
        return tau, np.zeros(model.b)


def not_a_controller(params):
    return object()
'''


def make_distribution(root, dist_name, entry_points, package="my_pkg", source=PLUGIN):
    """Write ``package/__init__.py`` and ``<dist_name>-0.1.dist-info`` (METADATA and
    ``entry_points.txt`` registering ``entry_points`` under ``vm_dynamics.controllers``)."""
    pkg = root / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(source))
    info = root / f"{dist_name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: 0.1\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    return root


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    make_distribution(tmp_path, "my_dist", {"my_ctrl": "my_pkg:MyController"})
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_builtins_available_without_installation():
    """The fallback table makes the built-ins work whether or not the entry points exist."""
    names = available_controllers()
    for name, cls in (("computed_torque", ComputedTorqueController),
                      ("pd_gravity", PDGravityController), ("task_space", TaskSpaceController)):
        assert name in names
        ctrl = get_controller(name)
        assert type(ctrl) is cls and isinstance(ctrl, Controller) and ctrl.name == name


def test_setup_py_registers_the_builtins():
    """setup.py's entry points for the group are exactly the in-code fallback table."""
    tree = ast.parse(open(os.path.join(REPO, "setup.py"), encoding="utf-8").read())
    eps = None
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            eps = ast.literal_eval(node.value)
    assert eps is not None
    lines = eps[ENTRY_POINT_GROUP]
    table = dict((s.strip() for s in ln.split("=", 1)) for ln in lines)
    assert table == BUILTIN_CONTROLLERS


def test_unknown_controller_lists_available():
    with pytest.raises(ValueError, match=r"'nope': unknown; available controllers are: "
                                         r"computed_torque, pd_gravity, task_space"):
        get_controller("nope")


def test_third_party_plugin_is_discovered_and_used(plugin_path):
    assert "my_ctrl" in available_controllers()
    ctrl = get_controller("my_ctrl", {"kp": 1.0, "kd": 0.5})
    assert isinstance(ctrl, Controller) and type(ctrl).__module__ == "my_pkg"
    assert ctrl.params == {"kp": 1.0, "kd": 0.5}
    assert get_controller("my_ctrl").params == {"kp": 100.0, "kd": 20.0}
    with pytest.raises(ValueError, match=r"my_ctrl: unknown parameter 'gain'; valid parameters "
                                         r"are: kd, kp"):
        get_controller("my_ctrl", {"gain": 1.0})
    with pytest.raises(ValueError, match="available controllers are: .*my_ctrl"):
        get_controller("nope")

    # closed loop on a fixed-base arm without gravity: the plug-in's law is what is applied,
    # and the PD Lyapunov function ½q̇ᵀMq̇ + ½k_p|e|² decreases (V̇ = −k_d|q̇|²)
    m = vm.load_model(random_tree_urdf(seed=1, n=4), base="fixed", gravity=(0.0, 0.0, 0.0))
    q_goal = np.array([0.3, -0.2, 0.1, 0.4])
    ctrl.reset(m, vm.State(0.0, np.eye(4), np.zeros(0), np.zeros(4), np.zeros(4)))
    tau, bw = ctrl.inputs(Reference(joint=JointSetpoint(q_goal)))
    traj = vm.simulate(m, np.eye(4), np.zeros(0), np.zeros(4), np.zeros(4), 1.0, 0.01,
                       tau=tau, base_wrench=bw)
    np.testing.assert_allclose(traj.tau, 1.0 * (q_goal - traj.q) - 0.5 * traj.qd, atol=1e-12)
    lyap = np.array([0.5 * qd @ m.mass_matrix(q) @ qd + 0.5 * np.sum((q_goal - q) ** 2)
                     for q, qd in zip(traj.q, traj.qd)])
    assert np.all(np.diff(lyap) <= 1e-9) and lyap[-1] < 0.5 * lyap[0]


def test_plugin_disappears_with_its_path(tmp_path, monkeypatch):
    make_distribution(tmp_path, "gone_dist", {"gone_ctrl": "gone_pkg:MyController"},
                      package="gone_pkg")
    with monkeypatch.context() as mp:
        mp.syspath_prepend(str(tmp_path))
        assert "gone_ctrl" in available_controllers()
    assert "gone_ctrl" not in available_controllers()


def test_broken_plugins_raise_clear_errors(tmp_path, monkeypatch):
    make_distribution(tmp_path, "bad_dist", {"missing_mod": "no_such_pkg:Thing",
                                             "missing_attr": "bad_pkg:Nothing",
                                             "not_ctrl": "bad_pkg:not_a_controller"},
                      package="bad_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"'missing_mod': entry point 'no_such_pkg:Thing' failed "
                                         r"to load: ModuleNotFoundError"):
        get_controller("missing_mod")
    with pytest.raises(ValueError, match="'missing_attr'.*AttributeError"):
        get_controller("missing_attr")
    with pytest.raises(ValueError, match=r"'not_ctrl': object has no reset\(\) method"):
        get_controller("not_ctrl")


def test_builtin_names_cannot_be_hijacked(tmp_path, monkeypatch):
    """An entry point claiming a built-in name with another target is ignored (with a warning);
    one with the built-in's own target (an installed vm_dynamics) is accepted silently."""
    make_distribution(tmp_path, "evil_dist", {"computed_torque": "evil_pkg:MyController"},
                      package="evil_pkg")
    make_distribution(tmp_path, "vm_dynamics_copy",
                      {"pd_gravity": BUILTIN_CONTROLLERS["pd_gravity"]}, package="unused_pkg")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="'evil_pkg:MyController' ignored"):
        ctrl = get_controller("computed_torque")
    assert type(ctrl) is ComputedTorqueController
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(get_controller("pd_gravity")) is PDGravityController
