"""The ROS 2 set-up of the tests that run real ROS processes (``test/ros``): a DDS domain of
their own on loopback, spinning a probe node until a condition holds, and where an installed
package is."""
from __future__ import annotations

import os
import time

from processes import REPO

#: the variables :func:`ros_domain_env` sets in this process
ROS_DOMAIN_VARIABLES = ("ROS_DOMAIN_ID", "CYCLONEDDS_URI", "ROS_AUTOMATIC_DISCOVERY_RANGE")


def installed_share(package: str):
    """The share directory of an installed ROS 2 ``package`` on the ament index, or None (no
    ament_index_python, or the package is not installed)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory(package)
    except (ImportError, LookupError):
        return None


def ros_domain_env(monkeypatch, **extra) -> dict:
    """Put this process (and so a probe node it creates) and its children in a domain of their
    own (``150 + pid % 80``) on loopback-only Cyclone DDS, with ``extra`` variables; returns
    the environment for child processes.  ``monkeypatch`` restores everything after the
    test."""
    values = {"ROS_DOMAIN_ID": str(150 + os.getpid() % 80),
              "CYCLONEDDS_URI": f"file://{REPO / 'test' / 'cyclonedds-loopback.xml'}",
              "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", **extra}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return dict(os.environ)


def spin_until(node, pred, timeout: float) -> bool:
    """Spin the rclpy ``node`` until ``pred()`` is true (True) or ``timeout`` s passed
    (False)."""
    import rclpy
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
        if pred():
            return True
    return False
