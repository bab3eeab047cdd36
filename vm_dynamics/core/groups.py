"""Vehicle displacement subgroups H ⊂ SE(3) (paper 000, Definition 1).

The vehicle's configuration is an element of a ``b``-dimensional Lie subgroup of SE(3), entered
through the 6×b matrix ``ι₀`` (37)/(39): the vehicle's body twist is ``ι₀ 𝒱`` with ``𝒱 ∈ R^b``.
The pose is always handled as the embedded 4×4 matrix ``g = ḡ₀ ι(h)``; since ``ḡ₀`` may be any
rigid transform, ``g`` moves in a coset of the subgroup.  Every group here is a *selection*
subgroup (``ι₀`` has orthonormal columns picked from the identity), so ``ι₀⁺ = ι₀ᵀ``.

=========  ===  =======================================  ==========================================
name        b   𝒱                                        typical vehicle
=========  ===  =======================================  ==========================================
``SE3``     6   ``[vx, vy, vz, ωx, ωy, ωz]``              spacecraft, AUV, drone
``SE2``     3   ``[vx, vy, ωz]``                          rover, surface vessel (planar)
``SO3``     3   ``[ωx, ωy, ωz]``                          ball joint, attitude-only testbed
``fixed``   0   ``[]``                                    fixed-base arm
=========  ===  =======================================  ==========================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import lie

__all__ = ["VehicleGroup", "SE3", "SE2", "SO3", "FIXED", "get_group", "GROUP_NAMES"]


@dataclass(frozen=True)
class VehicleGroup:
    """A displacement subgroup of SE(3) given by the columns ``axes`` of the 6×6 identity.

    ``axes`` lists which entries of the 6-twist ``[v; ω]`` the vehicle can move along.
    """

    name: str
    axes: tuple
    iota: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        iota = np.zeros((6, len(self.axes)))
        for col, row in enumerate(self.axes):
            iota[row, col] = 1.0
        iota.setflags(write=False)
        object.__setattr__(self, "iota", iota)

    @property
    def dim(self) -> int:
        """The group dimension ``b``."""
        return len(self.axes)

    def embed(self, xi: np.ndarray) -> np.ndarray:
        """``ι₀ 𝒱``: the 6-twist ``[v; ω]`` of a b-vector."""
        return self.iota @ xi

    def project(self, V6: np.ndarray) -> np.ndarray:
        """``ι₀ᵀ V``: the b-vector of a 6-twist (or of a 6-wrench, dually)."""
        return V6[list(self.axes)]

    def ad(self, xi: np.ndarray) -> np.ndarray:
        """``ad`` on 𝔥: ``ι₀ᵀ ad_{ι₀𝒱} ι₀`` (exact because 𝔥 is a subalgebra), b×b."""
        A = lie.ad(self.embed(xi))
        return A[np.ix_(self.axes, self.axes)]

    def exp(self, xi: np.ndarray) -> np.ndarray:
        """Embedded exponential ``exp((ι₀𝒱)^)`` (stays in the subgroup)."""
        return lie.se3_exp(self.embed(xi))

    def log(self, g: np.ndarray) -> np.ndarray:
        """b-vector ``𝒱`` with ``exp(𝒱) = g`` for ``g`` in the subgroup."""
        return self.project(lie.se3_log(g))

    def dexp_inv(self, xi: np.ndarray) -> np.ndarray:
        """``dexp⁻¹`` restricted to 𝔥 (b×b); see :func:`vm_dynamics.core.lie.dexp_inv`."""
        D = lie.dexp_inv(self.embed(xi))
        return D[np.ix_(self.axes, self.axes)]

    def dexp_inv_body(self, Theta: np.ndarray) -> np.ndarray:
        """``dexp⁻¹_{−Θ}`` restricted to 𝔥 (b×b): ``Θ̇ = dexp_inv_body(Θ) V`` for
        ``g = g_k exp(Θ)`` with the body velocity V; see :func:`vm_dynamics.core.lie.dexp_inv_body`."""
        return self.dexp_inv(-np.asarray(Theta, dtype=float))


SE3 = VehicleGroup("SE3", (0, 1, 2, 3, 4, 5))
SE2 = VehicleGroup("SE2", (0, 1, 5))
SO3 = VehicleGroup("SO3", (3, 4, 5))
FIXED = VehicleGroup("fixed", ())

_GROUPS = {"SE3": SE3, "SE2": SE2, "SO3": SO3, "fixed": FIXED}
GROUP_NAMES = tuple(_GROUPS)


def get_group(base) -> VehicleGroup:
    """Return the :class:`VehicleGroup` for a name (case-insensitive) or pass one through."""
    if isinstance(base, VehicleGroup):
        return base
    if isinstance(base, str):
        for name, group in _GROUPS.items():
            if base.lower() == name.lower():
                return group
    raise ValueError(f"base={base!r}: unknown vehicle group; choose one of {', '.join(GROUP_NAMES)}")
