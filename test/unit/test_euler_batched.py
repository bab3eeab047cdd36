"""The Euler-angle comparison's per-sample maps evaluated for all samples at once
(:meth:`EulerAngleModel.poses`, :meth:`~EulerAngleModel.velocity_maps`,
:func:`rotations_zyx`) are the single-sample ones (:meth:`~EulerAngleModel.pose`,
:meth:`~EulerAngleModel.velocity_map`, :func:`rotation_zyx`) row by row, to round-off."""
import numpy as np
import pytest
from urdf_factory import random_tree_urdf

import vm_dynamics as vm
from vm_dynamics.analysis import euler_model


@pytest.fixture(scope="module")
def em():
    m = vm.load_model(random_tree_urdf(seed=5, n=3), base="SE3", gravity=(0, 0, -9.81))
    return euler_model.EulerAngleModel(m)


def _states(em, N=50, seed=1):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(N, em.dim))
    xs[:, 3:6] = rng.uniform(-np.pi, np.pi, size=(N, 3))
    xs[:, 4] = rng.uniform(-1.5, 1.5, size=N)          # away from pitch ±90°
    xs[0, 3:6] = [0.0, 0.0, 0.0]
    xs[1, 3:6] = [np.pi, 1.5707, -np.pi]                # next to gimbal lock
    return xs


def test_rotations_zyx_is_rotation_zyx_row_by_row(em):
    xs = _states(em)
    R = euler_model.rotations_zyx(xs[:, 3:6])
    for k, x in enumerate(xs):
        np.testing.assert_allclose(R[k], euler_model.rotation_zyx(x[3:6]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(R @ R.transpose(0, 2, 1), np.broadcast_to(np.eye(3), R.shape),
                               rtol=0, atol=1e-14)


def test_poses_and_velocity_maps_are_the_single_sample_ones(em):
    xs = _states(em)
    g, B = em.poses(xs), em.velocity_maps(xs)
    assert g.shape == (len(xs), 4, 4) and B.shape == (len(xs), em.dim, em.dim)
    for k, x in enumerate(xs):
        np.testing.assert_allclose(g[k], em.pose(x), rtol=0, atol=1e-15)
        np.testing.assert_allclose(B[k], em.velocity_map(x), rtol=0, atol=1e-15)
    assert em.poses(xs[:0]).shape == (0, 4, 4)


def test_energies_of_many_states_are_the_single_state_ones(em):
    pytest.importorskip("numba")
    xs = _states(em, N=20)
    xds = np.random.default_rng(2).normal(size=xs.shape)
    E, cond = em.energies(xs, xds)
    for k in range(len(xs)):
        assert E[k] == pytest.approx(em.energy(xs[k], xds[k]), rel=1e-12, abs=1e-12)
        assert cond[k] == pytest.approx(em.condition_number(xs[k]), rel=1e-8)


def test_momentum_transforms_are_the_transposed_inverse_adjoints():
    """metrics.momentum_transforms (vectorised) equals lie.Ad_inv(g).T pose by pose, for poses
    far from the origin (the p~R block carries the lever arm)."""
    from scipy.spatial.transform import Rotation

    from vm_dynamics.analysis.metrics import momentum_transforms
    from vm_dynamics.core import lie
    rng = np.random.default_rng(3)
    g = np.tile(np.eye(4), (50, 1, 1))
    g[:, :3, :3] = Rotation.random(50, random_state=4).as_matrix()
    g[:, :3, 3] = rng.normal(scale=100.0, size=(50, 3))
    T = momentum_transforms(g)
    for k in range(50):
        np.testing.assert_allclose(T[k], lie.Ad_inv(g[k]).T, rtol=0, atol=1e-12)
