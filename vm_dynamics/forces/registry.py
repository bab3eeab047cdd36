"""The registry of force-element kinds: :class:`Forces`, the record the compiled kernels take,
has one field per kind holding that kind's parameter record (all elements of the kind, one row
each; zero rows when absent).  Registering a kind is one line here (its field, defaulting to
the kind's empty record) and one in the dispatcher, :mod:`vm_dynamics.forces.kernels`."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .hydrodynamics import LinkBuoyancy, LinkBuoyancyParams, VehicleHydrodynamics, VehicleHydrodynamicsParams
from .spring import Spring, SpringParams
from .two_body import TwoBody, TwoBodyParams

__all__ = ["Forces", "ELEMENTS", "compile_forces", "elements_from_config"]


def _none(record, **dtypes):
    """The empty record of a kind: zero rows, each field's trailing shape from ``dtypes``."""
    return record(**{f: np.zeros(shape, dtype=dt) for f, (shape, dt) in dtypes.items()})


_F, _I = np.float64, np.int64


class Forces(NamedTuple):
    """The parameters of every force element of a simulation, by kind."""

    vehicle_hydrodynamics: VehicleHydrodynamicsParams = _none(
        VehicleHydrodynamicsParams, linear=((0, 6), _F), quadratic=((0, 6), _F),
        buoyancy=((0,), _F), cob=((0, 3), _F), current=((0, 3), _F), up=((0, 3), _F))
    link_buoyancy: LinkBuoyancyParams = _none(
        LinkBuoyancyParams, body=((0,), _I), point=((0, 3), _F), force=((0,), _F),
        up=((0, 3), _F))
    spring: SpringParams = _none(
        SpringParams, body=((0,), _I), point=((0, 3), _F), anchor=((0, 3), _F),
        stiffness=((0,), _F))
    two_body: TwoBodyParams = _none(
        TwoBodyParams, body=((0,), _I), mu=((0,), _F), mass=((0,), _F), com=((0, 3), _F),
        inertia=((0, 3, 3), _F), gradient=((0,), _F))


#: the element class of each kind (``kind`` in scenario/node parameters)
ELEMENTS = {cls.kind: cls for cls in (VehicleHydrodynamics, LinkBuoyancy, Spring, TwoBody)}


def elements_from_config(specs, where: str = "forces") -> tuple:
    """The elements of a ``forces`` parameter list: one mapping per element with its ``kind``
    (a key of :data:`ELEMENTS`) and that kind's parameters
    (:meth:`~vm_dynamics.forces.base.ForceElement.from_config`).  None: no elements."""
    if specs is None:
        return ()
    if not isinstance(specs, (list, tuple)):
        raise ValueError(f"{where}: expected a list of force elements, got "
                         f"{type(specs).__name__}")
    out = []
    for i, spec in enumerate(specs):
        here = f"{where}[{i}]"
        if not isinstance(spec, dict):
            raise ValueError(f"{here}: expected a mapping with a 'kind', got "
                             f"{type(spec).__name__}")
        kind = spec.get("kind")
        if kind not in ELEMENTS:
            raise ValueError(f"{here}.kind: unknown {kind!r}; kinds are "
                             f"{', '.join(ELEMENTS)}")
        out.append(ELEMENTS[kind].from_config(spec, here))
    return tuple(out)


def compile_forces(model, elements) -> Forces:
    """The :class:`Forces` record of ``elements`` on ``model``: each element's rows
    (:meth:`~vm_dynamics.forces.base.ForceElement.compiled`) stacked under its kind."""
    rows: dict = {}
    for e in elements:
        if e.kind not in Forces._fields:
            raise ValueError(f"force element {type(e).__name__}: kind {e.kind!r} is not "
                             f"registered in vm_dynamics.forces.registry.Forces")
        rows.setdefault(e.kind, []).append(e.compiled(model))
    out = {}
    for kind, recs in rows.items():
        empty = Forces._field_defaults[kind]
        out[kind] = type(empty)(*(np.ascontiguousarray(np.concatenate([r[i] for r in recs]),
                                                       dtype=empty[i].dtype)
                                  for i in range(len(empty))))
    return Forces(**out)
