"""The message builders' checks on the lockstep hot path (finite vectors, joint names): their
fast paths accept exactly what the general checks accept, return the same arrays, and raise
the same errors (oracle: the general path, on inputs it cannot take a shortcut for)."""
from __future__ import annotations

import numpy as np
import pytest

from vm_dynamics.ros import messages as rm
from vm_dynamics.ros.fields import finite_vector


def test_finite_vector_returns_a_clean_array_itself_and_refuses_every_bad_entry():
    a = np.arange(6.0)
    assert finite_vector(a, 6, "v") is a
    assert finite_vector(a, None, "v") is a
    big = np.full(4, 1e308)                     # finite, but its sum overflows
    assert finite_vector(big, 4, "v") is big
    long = np.arange(100.0)
    assert finite_vector(long, 100, "v") is long
    for i in range(6):
        for bad in (np.nan, np.inf, -np.inf):
            b = a.copy()
            b[i] = bad
            with pytest.raises(ValueError, match=f"v contains NaN/Inf at index {i}$"):
                finite_vector(b, 6, "v")
    c = np.arange(100.0)
    c[77] = np.nan
    with pytest.raises(ValueError, match="index 77"):
        finite_vector(c, 100, "v")
    with pytest.raises(ValueError, match="v must have length 5, got 6"):
        finite_vector(a, 5, "v")
    # not a flat native float64 array: converted (a copy) as before
    for other in (np.arange(12.0)[::2], np.arange(6, dtype=np.float32), a.astype(">f8"),
                  a.reshape(1, 6), list(a)):
        got = finite_vector(other, 6, "v")
        assert got is not other and got.dtype == np.float64 and got.flags.c_contiguous
        assert np.array_equal(got, np.asarray(other, dtype=float).reshape(-1))


def test_joint_state_names_checked_once_still_refuse_bad_lists():
    good = ["j1", "j2", "j3"]
    for _ in range(3):                                     # checked, then known
        msg = rm.joint_state_msg(1.0, good, [1.0, 2.0, 3.0])
        assert msg.name == good and msg.name is not good
    for bad, text in ((["j1", "j1", "j3"], "duplicate joint names"),
                      (["j1", "", "j3"], "joint name at index 1 must be a non-empty str"),
                      (["j1", 2, "j3"], "joint name at index 1 must be a non-empty str"),
                      (["j1", ["x"], "j3"], "joint name at index 1 must be a non-empty str")):
        for _ in range(2):
            with pytest.raises(ValueError, match=text):
                rm.joint_state_msg(1.0, bad, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="JointState.position must have length 3, got 2"):
        rm.joint_state_msg(1.0, good, [1.0, 2.0])
