"""The run summary as strict JSON (``summary.json`` of ``vm-sim``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["to_jsonable", "write_summary_json"]


def to_jsonable(obj: Any) -> Any:
    """Recursively convert numpy/Path/tuple values to JSON types; NaN/Inf -> None."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (complex, np.complexfloating)):
        raise TypeError(f"cannot store complex value {obj!r} in JSON")
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool, np.integer)) and k is not None:
                raise TypeError(f"JSON object keys must be str/int, got {type(k).__name__}")
            out[str(k.item() if isinstance(k, np.generic) else k)] = to_jsonable(v)
        return out
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def write_summary_json(path: str | os.PathLike, data: Mapping[str, Any],
                       indent: int = 2) -> Path:
    """Write ``data`` as strict JSON (NaN/Inf become null); atomic replace. Returns path."""
    path = Path(path)
    text = json.dumps(to_jsonable(data), indent=indent, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
