"""Misspelled URDF attributes: the URDF readers take a missing attribute as its default (a
``<mass>`` without ``value`` is 0 kg), so ``<mass vlaue="1"/>`` would load as a massless link
and be reported, if at all, by a check that cannot name the typo.  :func:`check_inertial`
names it first."""
from __future__ import annotations

import difflib

__all__ = ["INERTIAL_ATTRIBUTES", "check_attributes", "check_inertial"]

#: The attributes the URDF specification defines on the children of ``<inertial>``.
INERTIAL_ATTRIBUTES = {
    "mass": ("value",),
    "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
    "origin": ("xyz", "rpy"),
}


def check_attributes(element, allowed, what: str) -> None:
    """``ValueError`` naming the first attribute of ``element`` that is not in ``allowed``
    (with the closest allowed name, if one is close), e.g. ``link 'a' <mass>: unknown
    attribute 'vlaue' (did you mean 'value'?); <mass> takes value``."""
    for name in element.attrib:
        if name in allowed:
            continue
        close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{what} <{element.tag}>: unknown attribute {name!r}{hint}; "
                         f"<{element.tag}> takes {', '.join(allowed)}")


def check_inertial(inertial, what: str) -> None:
    """Check the attributes of ``<mass>``, ``<inertia>`` and ``<origin>`` in an ``<inertial>``
    element (``what`` names the link in the error)."""
    for tag, allowed in INERTIAL_ATTRIBUTES.items():
        for element in inertial.findall(tag):
            check_attributes(element, allowed, what)
