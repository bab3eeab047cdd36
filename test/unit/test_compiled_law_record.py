"""A compiled law's data is defined once: :class:`vm_dynamics.control.compiled.CompiledLaw`
holds the kernel's record (:class:`vm_dynamics.control.laws.LawParams`) instead of a second
copy of its fields, and hands the engine that very record."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import our_model

import vm_dynamics as vm
from vm_dynamics.control import get_controller
from vm_dynamics.control.compiled import CompiledLaw
from vm_dynamics.control.laws import LawParams
from vm_dynamics.control.references import JointSetpoint, Reference
from vm_dynamics.dynamics import fast


def test_compiled_law_has_no_field_of_the_kernel_record():
    """None of the law's eleven data fields (options, reference, gains) is repeated;
    ``model`` is the controller's Model in one and its kernel constants in the other."""
    law_data = set(LawParams._fields) - {"model"}
    assert len(law_data) == 11
    fields = {f.name for f in dataclasses.fields(CompiledLaw)}
    assert not fields & law_data, fields & law_data


@pytest.mark.skipif(not fast.numba_available(), reason="numba not installed")
def test_the_engine_gets_the_record_the_controller_built():
    model = our_model("ur5", "SE3", (0.0, 0.0, -9.81))
    q = np.full(model.n, 0.1)
    ctrl = get_controller("computed_torque", {"kp": 49.0, "kd": 14.0})
    ctrl.reset(model, vm.State(0.0, np.eye(4), np.zeros(model.b), q, np.zeros(model.n)))
    law = ctrl.compiled_law(Reference(joint=JointSetpoint(q + 0.2)))
    rec = law.params()
    assert isinstance(rec, LawParams) and rec is law.params() and law.consts is rec.model
    assert np.array_equal(rec.kp, np.full(model.n, 49.0)) and np.array_equal(rec.first, q + 0.2)
