"""YAML input with bounds: parameter files, ``-p`` values and the hydrodynamics file.

PyYAML's pure-Python parser is quadratic in the nesting depth (a 200 kB file holding one
nested list takes minutes) and its composer recurses once per level (``RecursionError``);
an alias bomb (anchors referring to anchors) expands to gigabytes.  :class:`BoundedYamlLoader`
stops at :data:`MAX_YAML_DEPTH` levels and :data:`MAX_YAML_NODES` nodes as the events are
read, so a hostile file costs only the events up to the bound; :func:`load_yaml_file` adds a
size limit and rejects aliases.  Every problem is a ``yaml.YAMLError`` (from the loader) or
a ``ValueError`` naming the file (from :func:`load_yaml_file`).
"""
from __future__ import annotations

import io

import yaml

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "BoundedYamlLoader", "NoAliasYamlLoader",
           "load_yaml_file"]

#: Deepest nesting of mappings and lists (the shipped scenarios use 4).
MAX_YAML_DEPTH = 32
#: Most YAML nodes (scalars, lists, mappings, aliases): parsing costs ~30-100 µs per node, so
#: a bounded file is read in seconds at most.
MAX_YAML_NODES = 50_000


class BoundedYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises a ``yaml.MarkedYAMLError`` (pointing at the place)
    beyond :data:`MAX_YAML_DEPTH` levels or :data:`MAX_YAML_NODES` nodes.  ``yaml.parse``
    and ``yaml.load`` both take the events from :meth:`get_event`, where this is checked."""

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0
        self.nodes = 0

    def get_event(self):
        event = super().get_event()
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.depth += 1
            self.nodes += 1
            if self.depth > MAX_YAML_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested deeper than {MAX_YAML_DEPTH} levels (the limit for YAML "
                    f"input)", problem_mark=event.start_mark)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            self.depth -= 1
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            self.nodes += 1
        if self.nodes > MAX_YAML_NODES:
            raise yaml.MarkedYAMLError(
                problem=f"more than {MAX_YAML_NODES} values (the limit for YAML input)",
                problem_mark=event.start_mark)
        return event


class NoAliasYamlLoader(BoundedYamlLoader):
    """:class:`BoundedYamlLoader` that also rejects aliases (``*name``), as rcl's parameter
    parser does."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases ('*{event.anchor}') are not supported in parameter files "
                "(ROS 2 rejects them too)", event.start_mark)
        return super().compose_node(parent, index)


def load_yaml_file(path, max_bytes: int):
    """The document in the YAML file ``path``: at most ``max_bytes`` long, no aliases, within
    the bounds of :class:`BoundedYamlLoader`; every problem is a ``ValueError`` naming the
    file."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(max_bytes + 1)
        if len(text) > max_bytes:
            raise ValueError(f"{path}: larger than {max_bytes} bytes, the limit of this file")
        stream = io.StringIO(text)
        stream.name = str(path)                          # YAML errors quote the file
        return yaml.load(stream, Loader=NoAliasYamlLoader)   # noqa: S506 - a SafeLoader
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {' '.join(str(exc).split())}") from None
