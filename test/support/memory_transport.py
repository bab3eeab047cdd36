"""A transport for DynamicsNode in-process tests: publishers keep what they send, no wire."""
from __future__ import annotations

import io


class MemoryTransport:
    """Just what DynamicsNode calls: publishers that keep what they send (``sent``: (topic,
    message) in order), no wire."""

    def __init__(self, params):
        from vm_dynamics.transport.logger import StreamLogger
        self.params, self.sent = params, []
        self.logger = StreamLogger("memory", stream=io.StringIO())

    def publisher(self, topic, msgtype, qos="default"):
        sent = self.sent

        class _Pub:
            def publish(self, msg):
                sent.append((topic, msg))
        pub = _Pub()
        pub.topic = topic
        return pub

    def count_publishers(self, topic):
        return 1

    def subscribe(self, *args, **kwargs):
        pass

    def service(self, *args, **kwargs):
        pass

    def timer(self, period, callback):
        return None


class ListeningTransport(MemoryTransport):
    """A MemoryTransport whose publishers say whether anyone subscribes
    (``has_subscribers()``): ``listening[topic]`` (True for a topic not in it), a dict the
    test changes to let subscribers come and go."""

    def __init__(self, params, listening):
        super().__init__(params)
        self.listening = listening

    def publisher(self, topic, msgtype, qos="default"):
        pub = super().publisher(topic, msgtype, qos)
        pub.has_subscribers = lambda: self.listening.get(topic, True)
        return pub
