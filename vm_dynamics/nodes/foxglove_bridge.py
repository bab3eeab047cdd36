"""``vm-foxglove``: watch a scenario live in the Foxglove app, without ROS and without DDS.

    vm-foxglove spacecraft_arm                  # then open Foxglove -> ws://127.0.0.1:8765
    vm-foxglove uvms --controller pd_gravity --real-time-factor 0.5 --duration 20
    vm-foxglove planar_rover -p dt:=0.002 --mcap run.mcap

The :class:`~vm_dynamics.nodes.dynamics_core.DynamicsCore` and (if the scenario or
``--controller`` names one) a :class:`~vm_dynamics.nodes.controller_core.ControllerCore` run
in this process, exchanging messages synchronously every control period (deterministic, like
``lockstep``), paced to the wall clock.  Everything is streamed by a foxglove-sdk WebSocket
server on **127.0.0.1** (loopback) as ROS 2 messages (``cdr`` + ``ros2msg`` schemas — the same
bytes the nodes put on DDS):

``/joint_states``, ``/odom``, ``/tf``, ``/diagnostics``, ``/ee_path``, ``/robot_description``
(std_msgs/String; also served as the parameter ``robot_description`` for the 3D panel's URDF
layer), ``/effort_controller/commands``, ``/base_wrench``, and ``/vm_dynamics/metrics`` (JSON:
energy-balance residual, momentum change, tracking error, real-time factor — for Plot panels).
The app's clock follows simulated time (``broadcast_time``).  ``--mcap FILE`` also records the
stream.

WebSocket subprotocol: the server of foxglove-sdk (0.30) accepts only ``foxglove.sdk.v1``; a
client that offers only the older ``foxglove.websocket.v1`` (for example foxglove_bridge-era
clients and Lichtblick before it learned the new name) is refused with HTTP 400.  The Foxglove
app offers ``foxglove.sdk.v1``.  For a view that needs no app and no account, see ``vm-view``
and ``vm-sim --view`` (:mod:`vm_dynamics.viewer`).  Needs ``pip install vm_dynamics[viz]``;
without it the command says so in one line.  Parameters are the scenario file's,
overridden by ``-p name:=value`` (YAML values).

Clients are bounded (:mod:`~vm_dynamics.nodes.ws_gate`): the SDK server listens on a loopback
port of its own behind a gate on ``--host:--port`` that relays at most ``--max-clients``
connections (one more gets ``HTTP 503`` naming the limit) and keeps at most
``--client-queue`` messages queued per client, dropping the oldest data messages of a client
that reads slower than the stream (a client that never reads costs a bounded queue, not
memory without end, and does not slow the others).  The SDK's own log lines (a broken pipe per
message to a vanished client, one line per invalid client message) are throttled: at most one
line per kind of message every 5 s, with the count of those left out, and at most 20 lines in
5 s in all.
"""
from __future__ import annotations

import argparse
import logging
import math
import re
import sys
import time

import numpy as np
import yaml

from ..config.params import flatten, read_params_file
from ..config.scenario import scenario_path
from ..ros import messages as rm
from .controller_core import ControllerCore
from .dynamics_core import DynamicsCore
from .dynamics_node import PUBLICATIONS
from .event_log import reason_key
from .pacing import Pacer
from .ws_gate import WebSocketGate

__all__ = ["main", "FoxgloveBridge", "CHANNELS", "ThrottledLogHandler", "throttle_sdk_logs",
           "foxglove_droppable", "MAX_CLIENTS", "CLIENT_QUEUE"]

#: default cap on relayed connections and per-client queue (messages); see the docstring
MAX_CLIENTS = 16
CLIENT_QUEUE = 256
#: loggers of foxglove-sdk (its Rust crates, forwarded to Python logging) and of the gate
SDK_LOGGERS = ("foxglove", "tungstenite", "vm_dynamics.ws_gate")

STRING = "std_msgs/msg/String"

#: topic -> ROS message type of every channel the bridge opens
CHANNELS = {
    **{("/" + topic.lstrip("/")): mtype for topic, mtype, _ in PUBLICATIONS.values()
       if not topic.startswith("hil/")},       # the bridge simulates the arm (no HIL)
    "/effort_controller/commands": rm.FLOAT64_MULTI_ARRAY,
    "/base_wrench": rm.WRENCH_STAMPED,
    "/robot_description": STRING,
}
_KEY_TOPIC = {key: "/" + topic.lstrip("/") for key, (topic, _, _) in PUBLICATIONS.items()}
_KEY_TOPIC.update({"effort_commands": "/effort_controller/commands",
                   "base_wrench": "/base_wrench"})


class FoxgloveBridge:
    """The cores in-process plus the foxglove channels they are logged to.

    ``sink(topic, msgtype, cdr_bytes, log_time_ns)`` receives every message (the foxglove
    channels by default; tests pass a list appender).
    """

    def __init__(self, params, controller: str | None = None, sink=None,
                 wall=time.monotonic):
        # the cores exchange every period synchronously here: no lockstep between them
        params = dict(flatten(params), lockstep=False)
        self.wall = wall
        self.dyn = DynamicsCore.from_params(params)
        name = controller if controller is not None else (
            params.get("controller.name") or "")
        self.ctrl = None
        if name and name != "none":
            cparams = dict(params)
            if controller is not None:
                cparams["controller"] = controller
            self.ctrl = ControllerCore.from_params(cparams)
        self.steps_per_period = self.dyn.steps_per_period
        self.metrics_sink = None
        self.sink = sink if sink is not None else self._foxglove_sink()
        self._description_wall = None

    # ---------------------------------------------------------------- channels
    def _foxglove_sink(self):
        import foxglove
        channels = {topic: foxglove.Channel(
            topic, message_encoding="cdr",
            schema=foxglove.Schema(name=mtype, encoding="ros2msg",
                                   data=rm.msgdef(mtype).encode()))
            for topic, mtype in CHANNELS.items()}
        metrics = foxglove.Channel("/vm_dynamics/metrics", message_encoding="json")

        def sink(topic, mtype, data, log_time):
            channels[topic].log(data, log_time=log_time)
        self.metrics_sink = lambda d, log_time: metrics.log(d, log_time=log_time)
        return sink

    def _emit(self, key_or_topic: str, msg, stamp_ns: int) -> None:
        topic = _KEY_TOPIC.get(key_or_topic, key_or_topic)
        mtype = CHANNELS[topic]
        self.sink(topic, mtype, rm.serialize(msg, mtype), stamp_ns)

    # ---------------------------------------------------------------- loop
    def control_period(self) -> bool:
        """Publish what is due, run the controller (if any) on the current state, then one
        control period of simulation.  False when the simulation is paused/diverged."""
        d, c = self.dyn, self.ctrl
        now = self.wall()
        stamp = rm.stamp_to_ns(d.t)
        for key, msg in d.pop_due(now):
            self._emit(key, msg, stamp)
            if key == "joint_states" and self.metrics_sink is not None:
                self.metrics_sink(self.metrics(), stamp)
        if self._description_wall is None or now - self._description_wall > 2.0:
            self._emit("/robot_description",
                       rm.TYPESTORE.types[STRING](data=d.robot.urdf_xml), stamp)
            self._description_wall = now
        if c is not None:
            for key, msg in d.state_messages():
                if key == "joint_states":
                    c.on_joint_state(msg)
                elif key == "odom":
                    c.on_odometry(msg)
            for key, msg in c.command_messages():
                d.apply_command(key, msg)
                self._emit(key, msg, stamp)
        return d.run(self.steps_per_period) > 0

    def metrics(self) -> dict:
        d = self.dyn
        out = {"t": d.t, "energy_balance_residual": d.residual,
               "watchdog": d.watchdog, "paused": d.paused,
               "real_time_factor": d.timing.get("real_time_factor")}   # None until measured
        if self.ctrl is not None:
            e = self.ctrl.joint_error(d.t)
            if e is not None:
                out["tracking_error"] = float(np.linalg.norm(e))
                out["joint_errors"] = [float(x) for x in e]
        return out

    def run(self, duration: float = 0.0, real_time_factor: float = 1.0, server=None,
            should_stop=lambda: False) -> None:
        """Run until ``duration`` s of simulated time (0 = forever), paced to the wall clock."""
        d = self.dyn
        period = self.steps_per_period * d.dt
        pacer = Pacer(period, real_time_factor, period)
        while not should_stop() and (duration <= 0 or d.t < duration - 1e-12):
            now = self.wall()
            due = pacer.steps_due(now, int(round(d.t / period)))
            d.timing = pacer.stats()
            for _ in range(max(due, 0) if real_time_factor > 0 else 1):
                if not self.control_period():
                    break
            if server is not None:
                server.broadcast_time(rm.stamp_to_ns(d.t))
            if real_time_factor > 0 or d.paused:
                time.sleep(min(period / max(real_time_factor, 1e-9), 0.02)
                           if real_time_factor > 0 else 0.05)


class ThrottledLogHandler(logging.Handler):
    """Writes log records to ``stream`` (stderr), at most one per ``period`` s per kind of
    message and at most ``budget`` lines per ``period`` in all; the next line of a kind
    says how many of it were left out, and a line says how many went over the budget.

    A kind is the logger and the message without numbers, addresses and quoted values
    (``Broken pipe`` for client 127.0.0.1:4711 and for :4712 are one kind).
    """

    def __init__(self, period: float = 5.0, budget: int = 20, stream=None,
                 max_kinds: int = 512, clock=time.monotonic) -> None:
        super().__init__(logging.WARNING)
        self.period, self.budget, self.max_kinds = float(period), int(budget), int(max_kinds)
        self.stream = stream
        self.clock = clock
        self.written = 0            # lines written
        self.suppressed = 0         # records left out
        self._kinds: dict = {}      # kind -> [last written (monotonic s), left out since]
        self._window = (-1e9, 0, 0)   # (start, lines written in it, over the budget)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:              # a malformed record must not take the bridge down
            msg = str(record.msg)
        now = self.clock()
        kind = (record.name, reason_key(re.sub(r"`[^`]*`", "…", msg)))
        state = self._kinds.get(kind)
        if state is not None and now - state[0] < self.period:
            state[1] += 1
            self.suppressed += 1
            return
        start, lines, over = self._window
        if now - start >= self.period:
            if over:
                self._write(f"[WARN] [vm-foxglove]: {over} more log lines in the last "
                            f"{now - start:.0f} s left out (more than {self.budget} lines "
                            f"in {self.period:g} s)")
            start, lines, over = now, 0, 0
        if lines >= self.budget:
            self._window = (start, lines, over + 1)
            self.suppressed += 1
            return
        if len(self._kinds) >= self.max_kinds:
            self._kinds = {k: v for k, v in self._kinds.items() if now - v[0] < self.period}
        more = f" ({state[1]} more like this left out)" if state is not None and state[1] \
            else ""
        self._kinds[kind] = [now, 0]
        self._window = (start, lines + 1, over)
        self._write(f"[{record.levelname}] [{record.name}]: {msg}{more}")

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(line + "\n")
        stream.flush()
        self.written += 1


def throttle_sdk_logs(handler: logging.Handler | None = None) -> logging.Handler:
    """Route the loggers of foxglove-sdk and of the gate (:data:`SDK_LOGGERS`) to
    ``handler`` (a new :class:`ThrottledLogHandler` by default) and only there."""
    handler = handler or ThrottledLogHandler()
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, ThrottledLogHandler)]:
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    return handler


def foxglove_droppable(opcode: int, head: bytes) -> bool:
    """Frames of the foxglove WebSocket protocol that a newer one supersedes: binary
    ``Message Data`` (opcode byte 1) and ``Time`` (2).  Text (JSON: advertisements, status,
    parameters) and service/asset responses are never dropped."""
    return opcode == 0x2 and len(head) > 0 and head[0] in (1, 2)


def _listener(values: dict):
    """A ServerListener serving ``robot_description`` (the 3D panel's URDF parameter source)."""
    from foxglove.websocket import ServerListener

    class Listener(ServerListener):
        def on_get_parameters(self, client, param_names, request_id=None):
            import foxglove
            names = param_names or list(values)
            return [foxglove.Parameter(n, value=values[n]) for n in names if n in values]
    return Listener()


def _overrides(pairs) -> dict:
    out = {}
    for item in pairs or []:
        name, sep, value = item.partition(":=")
        if not sep or not name:
            raise ValueError(f"-p {item!r}: expected name:=value")
        out[name] = yaml.safe_load(value)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="vm-foxglove", description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help="scenario name (vm-sim --list) or parameter YAML file")
    ap.add_argument("--controller", help="controller plug-in, or 'none' (default: the "
                    "scenario's)")
    ap.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--real-time-factor", type=float, default=1.0,
                    help="simulated s per wall s; 0 = as fast as possible")
    ap.add_argument("--duration", type=float, default=0.0, help="simulated s (0 = forever)")
    ap.add_argument("--mcap", help="also record the stream to this MCAP file")
    ap.add_argument("--max-clients", type=int, default=MAX_CLIENTS,
                    help=f"connections served at a time; more are refused with HTTP 503 "
                         f"(default {MAX_CLIENTS})")
    ap.add_argument("--client-queue", type=int, default=CLIENT_QUEUE,
                    help=f"messages queued per client; a client that reads slower loses its "
                         f"oldest data messages (default {CLIENT_QUEUE})")
    ap.add_argument("-p", action="append", metavar="NAME:=VALUE",
                    help="override a parameter (YAML value), e.g. -p dt:=0.002")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        params = flatten(read_params_file(scenario_path(args.scenario)))
        params.update(_overrides(args.p))
        if not (args.real_time_factor >= 0 and math.isfinite(args.real_time_factor)):
            raise ValueError("--real-time-factor must be a finite number >= 0")
        for flag, value in (("--max-clients", args.max_clients),
                            ("--client-queue", args.client_queue)):
            if value < 1:
                raise ValueError(f"{flag} must be an integer >= 1, got {value}")
        try:
            import foxglove
            from foxglove.websocket import Capability
        except ImportError as exc:
            raise ValueError(f"{getattr(exc, 'name', None) or 'foxglove-sdk'} is not "
                             f"installed; install it with: pip install 'vm_dynamics[viz]'"
                             ) from None
        bridge = FoxgloveBridge(params, args.controller)
    except ValueError as exc:
        print(f"vm-foxglove: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    values = {"robot_description": bridge.dyn.robot.urdf_xml}
    throttle_sdk_logs()
    # the SDK server on a loopback port of its own, reached only through the gate
    server = foxglove.start_server(name="vm_dynamics", host="127.0.0.1", port=0,
                                   capabilities=[Capability.Time, Capability.Parameters],
                                   server_listener=_listener(values))
    try:
        gate = WebSocketGate(
            ("127.0.0.1", server.port), args.host, args.port, max_clients=args.max_clients,
            max_frames=args.client_queue, droppable=foxglove_droppable,
            refusal=f"vm-foxglove: too many clients: at most {args.max_clients} at a time "
                    f"(--max-clients); close another connection and retry").start()
    except OSError as exc:
        server.stop()
        print(f"vm-foxglove: error: cannot listen on {args.host}:{args.port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    writer = foxglove.open_mcap(args.mcap, allow_overwrite=True) if args.mcap else None
    print(f"vm-foxglove: {bridge.dyn.model!r}, controller "
          f"{bridge.ctrl.controller_name if bridge.ctrl else 'none'}; open Foxglove and connect "
          f"to ws://{args.host}:{gate.port} (at most {args.max_clients} clients; Ctrl-C to "
          f"stop)", file=sys.stderr)
    try:
        bridge.run(args.duration, args.real_time_factor, server)
    except KeyboardInterrupt:
        pass
    finally:
        if writer is not None:
            writer.close()
        gate.stop()
        server.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
