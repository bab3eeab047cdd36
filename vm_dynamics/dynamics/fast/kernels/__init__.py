"""Compiled kernels of the fast path, one module per algorithm (imported lazily).

Scalar-loop implementations of the recursions described in :mod:`vm_dynamics.dynamics.fast`; every
kernel works in the vehicle frame and takes the model as one named record ``C``
(:class:`~vm_dynamics.dynamics.fast.records.ModelConstants`, ``FastModel.kernel_constants``: body
index 0 is the vehicle, body ``j + 1`` is moved by joint ``j``, ``C.parent[j] < j + 1``), then
the state and input arrays, then its work arrays as a named
:class:`~vm_dynamics.dynamics.fast.records.Workspace` ``ws`` (allocated inside when not given).
``cache=True`` stores the compiled code next to this file (or in numba's user cache), so the
compile cost (tens of seconds for all kernels) is paid once per machine, not per process.

Status codes returned by the kernels: 0 ok, 1 ``g`` is not a rigid transform, 2 non-finite
result (a NaN/Inf input), 3 a non-positive articulated pivot (cannot happen for a valid model),
4 an input out of the public API's range (:mod:`.checked`, the entry points the API calls).

Modules: :mod:`.jit` (numba set-up), :mod:`.algebra`, :mod:`.kinematics`, :mod:`.momentum`,
:mod:`.aba` (forward dynamics), :mod:`.rnea` (inverse dynamics), :mod:`.crba` (mass matrix),
:mod:`.checked` (those with the inputs' range test first), :mod:`.packed` (the entry points of
single calls from Python: the model in one array), :mod:`.objects` (arguments handed over as
Python objects, their kind checked in compiled code), :mod:`.coupling` (mimic joints).
The simulation step is :mod:`vm_dynamics.sim.kernels`, the compiled control law
:mod:`vm_dynamics.control.laws`, the force elements' kernels :mod:`vm_dynamics.forces.kernels`.
"""
from . import checked, packed
from .aba import forward_dynamics, forward_dynamics_batch, forward_dynamics_range, num_threads
from .algebra import dexp_inv_apply, se3_exp
from .crba import mass_matrix
from .jit import NUMBA
from .kinematics import frame_pose
from .rnea import free_floating_inverse_dynamics, inverse_dynamics

__all__ = ["NUMBA", "checked", "packed", "forward_dynamics", "forward_dynamics_batch", "forward_dynamics_range",
           "num_threads", "dexp_inv_apply", "se3_exp", "mass_matrix", "frame_pose",
           "free_floating_inverse_dynamics", "inverse_dynamics"]
