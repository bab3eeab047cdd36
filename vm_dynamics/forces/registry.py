"""The registry of force-element kinds: :class:`Forces`, the record the compiled kernels take,
has one field per kind holding that kind's parameter record (all elements of the kind, one row
each; zero rows when absent).  Registering a kind is its class in :data:`ELEMENTS` (for the
configuration) and, when it has compiled rows, one field here (defaulting to the kind's empty
record) and one call in the dispatcher, :mod:`vm_dynamics.forces.kernels`."""
from __future__ import annotations

import difflib
from typing import NamedTuple

import numpy as np

from .gravity import UniformGravity
from .hydrodynamics import LinkBuoyancy, LinkBuoyancyParams, VehicleHydrodynamics, VehicleHydrodynamicsParams
from .spring import Spring, SpringParams
from .two_body import TwoBody, TwoBodyParams

__all__ = ["Forces", "ELEMENTS", "compile_forces", "elements_from_config",
           "element_from_config", "config_items"]


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
ELEMENTS = {cls.kind: cls for cls in (UniformGravity, VehicleHydrodynamics, LinkBuoyancy,
                                      Spring, TwoBody)}


def _nearest(word, options) -> str:
    """`` (did you mean 'x'?)`` for the option nearest ``word``, or ``""``."""
    near = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def element_from_config(spec, where: str):
    """The element of one mapping with its ``kind`` (a key of :data:`ELEMENTS`) and that
    kind's :attr:`~vm_dynamics.forces.base.ForceElement.parameters`
    (:meth:`~vm_dynamics.forces.base.ForceElement.from_config`); an unknown kind or key is a
    one-line ``ValueError`` naming it, with the nearest valid name."""
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: expected a mapping with a 'kind', got "
                         f"{type(spec).__name__}")
    kind = spec.get("kind")
    if kind not in ELEMENTS:
        raise ValueError(f"{where}.kind: unknown {kind!r}{_nearest(kind, ELEMENTS)}; kinds "
                         f"are {', '.join(ELEMENTS)}")
    cls = ELEMENTS[kind]
    unknown = sorted(str(k) for k in spec if k != "kind" and k not in cls.parameters)
    if unknown:
        raise ValueError(f"{where}: unknown keys {', '.join(unknown)}"
                         f"{_nearest(unknown[0], cls.parameters)}; a {kind} element has "
                         f"{', '.join(cls.parameters) or 'no parameters'}")
    return cls.from_config(spec, where)


def config_items(specs, where: str = "forces") -> list:
    """``[(label, mapping)]`` of a ``forces`` parameter: a list of element mappings (labels
    ``forces[i]``) or a mapping of names to them (the form a ROS 2 parameter file can hold:
    ``forces.<name>.kind`` ...; labels ``forces.<name>``).  None or empty: none."""
    if specs is None:
        return []
    if isinstance(specs, dict) and "kind" in specs:
        raise ValueError(f"{where}: expected a list of force elements or a mapping of names "
                         f"to them, got one element (a mapping with 'kind')")
    if isinstance(specs, dict):
        return [(f"{where}.{name}", spec) for name, spec in specs.items()]
    if not isinstance(specs, (list, tuple)):
        raise ValueError(f"{where}: expected a list of force elements or a mapping of names "
                         f"to them, got {type(specs).__name__}")
    return [(f"{where}[{i}]", spec) for i, spec in enumerate(specs)]


def elements_from_config(specs, where: str = "forces") -> tuple:
    """The elements of a ``forces`` parameter (:func:`config_items`, each by
    :func:`element_from_config`; errors name the element by its label)."""
    return tuple(element_from_config(spec, label) for label, spec in config_items(specs, where))


def compile_forces(model, elements) -> Forces:
    """The :class:`Forces` record of ``elements`` on ``model``: each element's rows
    (:meth:`~vm_dynamics.forces.base.ForceElement.compiled`) stacked under its kind."""
    rows: dict = {}
    for e in elements:
        row = e.compiled(model)
        if row is None:             # a model constant (uniform gravity)
            continue
        if e.kind not in Forces._fields:
            raise ValueError(f"force element {type(e).__name__}: kind {e.kind!r} is not "
                             f"registered in vm_dynamics.forces.registry.Forces")
        rows.setdefault(e.kind, []).append(row)
    out = {}
    for kind, recs in rows.items():
        empty = Forces._field_defaults[kind]
        out[kind] = type(empty)(*(np.ascontiguousarray(np.concatenate([r[i] for r in recs]),
                                                       dtype=empty[i].dtype)
                                  for i in range(len(empty))))
    return Forces(**out)
