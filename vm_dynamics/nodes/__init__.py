"""ROS 2 nodes of vm_dynamics: transport-independent cores and thin node wrappers.

Layers (imports point downwards only):

* :mod:`.parameters` (the parameter tables), :mod:`.robot` (model and names from parameters),
  :mod:`.event_log` (throttled events), :mod:`.pacing` (wall-clock pacing),
  :mod:`.publisher_watch` (a second publisher of a node's topics on the domain).
* :mod:`.dynamics_core` — :class:`~.dynamics_core.DynamicsCore`: the simulation behind the
  dynamics node (inputs, watchdog, lockstep, divergence guard, outputs as messages).
  No ROS, no DDS.
* :mod:`.controller_core` — :class:`~.controller_core.ControllerCore`: a controller plug-in fed
  by JointState/Odometry, with JointTrajectory and PoseStamped references.  No ROS, no DDS.
* :mod:`.dynamics_node`, :mod:`.controller_node` — console scripts ``dynamics_node`` and
  ``controller_node``: create a transport (:func:`vm_dynamics.transport.make_transport`, rclpy
  or plain DDS), declare parameters, wire topics/timers/services to the cores.
* :mod:`.foxglove_bridge` — console script ``vm-foxglove``: the cores in-process, streamed to
  the Foxglove app over a loopback WebSocket (no ROS, no DDS).
"""
