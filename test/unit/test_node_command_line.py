"""A starting node's command line (nodes/parameters.checked_command_line, used by both nodes'
start-up): the folders of its parameter files, and one warning naming the parameters it was
given that it does not know."""
from __future__ import annotations

from pathlib import Path

import pytest

from vm_dynamics.nodes.controller_core import controller_parameter_defaults
from vm_dynamics.nodes.dynamics_node import node_parameter_defaults
from vm_dynamics.nodes.parameters import checked_command_line

REPO = Path(__file__).resolve().parents[2]


class Logger:
    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


@pytest.mark.parametrize("node, defaults_of", [("dynamics_node", node_parameter_defaults),
                                               ("controller_node",
                                                controller_parameter_defaults)])
def test_unknown_parameters_are_warned_once_and_the_folders_returned(node, defaults_of):
    cfg = str(REPO / "config" / "spacecraft_arm.yaml")
    logger = Logger()
    folders = checked_command_line([node, "--ros-args", "--params-file", cfg, "-p",
                                    "dtt:=0.002"], node, defaults_of, logger)
    assert folders == [str((REPO / "config").resolve())]
    assert len(logger.warnings) == 1
    assert logger.warnings[0].startswith("unknown parameter 'dtt' (did you mean 'dt'?); valid names: ")
    assert logger.warnings[0].endswith("; ignored")
    logger = Logger()
    assert checked_command_line([node, "--ros-args", "--params-file", cfg], node, defaults_of,
                                logger) == folders
    assert logger.warnings == []
