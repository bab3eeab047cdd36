"""The lockstep over DDS with its messages written from the nodes' arrays and read back into
arrays (vm_dynamics.nodes.lockstep_wire): what goes on the wire is the reference encoding of
the messages (any ROS 2 node reads it), no period is lost, and every command is applied in
the period after the state it answers.

Set-up: dynamics_node and controller_node as processes (spacecraft_arm, lockstep at 1 kHz,
``dt`` 1 ms, ``real_time_factor`` 0) and a probe in this process reading the four lockstep
topics as raw CDR.  Network rule: loopback-only Cyclone configuration, the domain of
``ROS_DOMAIN_ID`` (67 if unset).
"""
from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
from processes import dds_env, stop_processes

from vm_dynamics.ros import messages as rm
from vm_dynamics.transport import QosSpec

REPO = Path(__file__).resolve().parents[2]
PARAMS = ["--ros-args", "--params-file", str(REPO / "config" / "spacecraft_arm.yaml"),
          "-p", "lockstep:=true", "-p", "control_rate:=1000.0", "-p", "dt:=0.001",
          "-p", "real_time_factor:=0.0"]
TOPICS = {"/joint_states": rm.JOINT_STATE, "/odom": rm.ODOMETRY,
          "/joint_commands": rm.JOINT_STATE, "/base_wrench": rm.WRENCH_STAMPED}


def test_lockstep_cdr_from_arrays_is_the_reference_encoding_and_loses_no_period(monkeypatch,
                                                                               tmp_path):
    env = dds_env(int(os.environ.get("ROS_DOMAIN_ID", "67")))
    for k in ("CYCLONEDDS_URI", "ROS_DOMAIN_ID", "VM_DYNAMICS_TRANSPORT"):
        monkeypatch.setenv(k, env[k])
    from vm_dynamics.transport.dds import DdsTransport
    probe = DdsTransport("probe", {}, ["probe"])
    got = {topic: [] for topic in TOPICS}
    deep = QosSpec(reliable=False, transient_local=False, depth=100_000)
    for topic, mtype in TOPICS.items():
        probe.subscribe(topic, mtype, got[topic].append, deep, raw=True)
    logs = {k: open(tmp_path / f"{k}.log", "w") for k in ("dyn", "ctl")}
    procs = [subprocess.Popen([sys.executable, "-m", f"vm_dynamics.nodes.{mod}", *PARAMS],
                              env=env, cwd=REPO, stdout=logs[k], stderr=subprocess.STDOUT)
             for k, mod in (("ctl", "controller_node"), ("dyn", "dynamics_node"))]
    try:
        def enough():
            stamps = {rm.parse_joint_state(rm.deserialize(d, rm.JOINT_STATE)).stamp_ns
                      for d in got["/joint_states"][-5:]}
            return len(got["/joint_states"]) > 600 and max(stamps, default=0) > 0.5e9
        assert probe.spin_until(enough, 180.0), \
            (tmp_path / "dyn.log").read_text()[-2000:] + (tmp_path / "ctl.log").read_text()
    finally:
        stop_processes(procs, logs.values())
        probe.shutdown()
    for topic, mtype in TOPICS.items():
        assert got[topic], topic
        for data in got[topic]:                  # the bytes rosbags writes for the message
            assert data == rm.serialize(rm.deserialize(data, mtype), mtype), topic
    states = [rm.parse_joint_state(rm.deserialize(d, rm.JOINT_STATE)) for d in
              got["/joint_states"]]
    odom = {rm.parse_odometry(rm.deserialize(d, rm.ODOMETRY)).stamp_ns for d in got["/odom"]}
    commands = {}
    for d in got["/joint_commands"]:
        js = rm.parse_joint_state(rm.deserialize(d, rm.JOINT_STATE), required="effort")
        commands[js.stamp_ns] = dict(zip(js.names, js.effort))
    wrenches = {rm.parse_wrench_stamped(rm.deserialize(d, rm.WRENCH_STAMPED)).stamp_ns
                for d in got["/base_wrench"]}
    stamps = [s.stamp_ns for s in states]
    # after the first command; a state re-sent while its answer is late (a heartbeat) once
    run = list({s.stamp_ns: s for s in states if s.stamp_ns > 0}.values())
    d = np.diff([s.stamp_ns for s in run])
    assert np.all(d == 1_000_000), np.unique(d)                  # every period, in order
    answered = 0
    for prev, state in zip(run, run[1:]):
        assert prev.stamp_ns in odom                             # its odometry went out too
        cmd = commands.get(prev.stamp_ns)
        if cmd is None:
            continue                                             # (the probe missed it)
        assert prev.stamp_ns in wrenches
        applied = dict(zip(state.names, state.effort))            # held over the period
        assert all(applied[name] == value for name, value in cmd.items()), (cmd, applied)
        answered += 1
    assert answered > 0.9 * (len(run) - 1), (answered, len(run), stamps[:5])


def test_the_nodes_take_the_array_path_only_where_the_transport_writes_and_hands_cdr():
    from vm_dynamics.config.params import flatten, read_params_file
    from vm_dynamics.nodes import dynamics_node as dn
    from vm_dynamics.nodes.dynamics_core import DynamicsCore
    doc = read_params_file(REPO / "config" / "spacecraft_arm.yaml")
    params = dn.node_parameter_defaults()
    params.update(flatten(doc.get("/**", {}).get("ros__parameters", doc)))
    params.update(lockstep=True, real_time_factor=0.0)

    class Stub:
        def __init__(self, cdr):
            self.params, self.cdr_handlers, self.subs = params, cdr, {}
            self.logger = types.SimpleNamespace(warn=lambda *a: None, info=lambda *a: None)

        def publisher(self, topic, msgtype, qos="default"):
            return types.SimpleNamespace(publish=lambda msg: None, topic=topic,
                                         writes_cdr=self.cdr_handlers, publish_cdr=lambda d: None)

        def count_publishers(self, topic):
            return 1

        def subscribe(self, topic, msgtype, callback, qos="default", **bounds):
            self.subs[topic] = bounds

        def service(self, name, srvtype, handler):
            pass

        def timer(self, period, callback):
            return None

    core_params = {k: v for k, v in params.items() if k not in dn.NODE_PARAMETERS}
    for cdr in (True, False):
        core = DynamicsCore.from_params(core_params)
        t = Stub(cdr)
        node = dn.DynamicsNode(t, core)
        assert (node.wire is not None) == cdr and (core.wire is not None) == cdr
        assert ("cdr" in t.subs["joint_commands"]) == cdr and ("cdr" in t.subs["base_wrench"]) \
            == cdr
        keys = [key for key, msg in core.state_messages()]
        assert keys[:2] == ["joint_states", "odom"]
        kinds = {key: type(msg) is bytes for key, msg in core.state_messages()}
        assert kinds["joint_states"] == cdr and kinds["odom"] == (cdr and not core.path_sample)
    # a command read from its CDR is applied like the message, and advances the lockstep
    data = rm.serialize(rm.joint_state_msg(rm.ns_to_time_msg(core.stamp_ns), core.robot.joints,
                                           None, effort=np.arange(len(core.robot.joints)) + 0.5))
    t = Stub(True)
    core = DynamicsCore.from_params(core_params)
    node = dn.DynamicsNode(t, core)
    assert t.subs["joint_commands"]["cdr"](data) is True
    assert core.effort.fresh and core.effort.accepted == 1
    np.testing.assert_array_equal(core.effort.value, np.arange(len(core.robot.joints)) + 0.5)
    off = rm.serialize(rm.joint_state_msg(0.0, list(reversed(core.robot.joints)), None,
                                          effort=np.zeros(len(core.robot.joints))))
    assert t.subs["joint_commands"]["cdr"](off) is False        # the message path decides
