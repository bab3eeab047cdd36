"""A misspelled attribute in a link's ``<inertial>`` is named, instead of being read as its
default (``<mass vlaue="1"/>`` was a massless link, reported as "zero mass with nonzero
rotational inertia")."""
import pytest

import vm_dynamics as vm

LINK = ('<robot name="r"><link name="a"><inertial>{origin}<mass {mass}/>'
        '<inertia {inertia}/></inertial></link></robot>')
GOOD = dict(origin='<origin xyz="0 0 0" rpy="0 0 0"/>', mass='value="1"',
            inertia='ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"')


def urdf(**changes):
    return LINK.format(**{**GOOD, **changes})


def test_well_formed_inertial_loads():
    assert vm.load_model(urdf()).n == 0


@pytest.mark.parametrize("changes, message", [
    (dict(mass='vlaue="1"'),
     "link 'a' <mass>: unknown attribute 'vlaue' (did you mean 'value'?); <mass> takes value"),
    (dict(inertia='ixx="1" iyy="1" izz="1" ixz="0" iyz="0" ixyy="0"'),
     "link 'a' <inertia>: unknown attribute 'ixyy'"),
    (dict(origin='<origin xyz="0 0 0" ryp="0 0 0"/>'),
     "link 'a' <origin>: unknown attribute 'ryp' (did you mean 'rpy'?); <origin> takes xyz, rpy"),
    (dict(mass='kg="1"'), "link 'a' <mass>: unknown attribute 'kg'; <mass> takes value"),
])
def test_unknown_inertial_attribute_is_named(changes, message):
    with pytest.raises(ValueError) as err:
        vm.load_model(urdf(**changes))
    assert str(err.value).startswith(message)
    assert "zero mass" not in str(err.value)
