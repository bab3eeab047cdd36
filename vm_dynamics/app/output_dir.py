"""Where ``vm-sim`` writes: the output directory, checked before the run.

Without ``--out`` it is ``out/<scenario name>`` and must stay inside ``out/``; it is never a
system directory (:data:`SYSTEM_TREES`, :data:`SYSTEM_DIRS`, the home directory), also not
through a symbolic link; an existing directory must be empty or hold an earlier run's output
unless ``--force``.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from .arguments import UsageError

__all__ = ["SAFE_NAME", "SYSTEM_TREES", "SYSTEM_DIRS", "system_directory", "earlier_output",
           "foreign_entries", "output_dir"]

#: Names allowed for the default output directory ``out/<scenario>``.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: Output directories vm-sim never writes into: these trees of the operating system (and
#: everything below them) ...
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
                "/run", "/sbin", "/sys", "/usr", "/System", "/Library", "/private/etc")
#: ... and these directories themselves (their subdirectories are fine), with the home
#: directory.
SYSTEM_DIRS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp", "/var",
               "/var/tmp", "/Users", "/Volumes", "/private", "/private/tmp", "/private/var")


def system_directory(real: Path) -> str | None:
    """The system directory ``real`` (a resolved path) is or lies in, else None."""
    home = os.path.realpath(os.path.expanduser("~"))
    text = str(real)
    for tree in SYSTEM_TREES:
        if text == tree or text.startswith(tree + os.sep):
            return tree
    if text in SYSTEM_DIRS or text == home:
        return text
    return None


def earlier_output(directory: Path) -> bool:
    """``directory`` holds the summary.json of an earlier vm-sim run (a regular file with a
    JSON object naming a scenario and an integrator)."""
    summary = directory / "summary.json"
    try:
        if summary.is_symlink() or not summary.is_file() or summary.stat().st_size > 2**20:
            return False
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "scenario" in data and "integrator" in data


def foreign_entries(directory: Path, limit: int = 3) -> list:
    """Up to ``limit`` names in an existing ``directory`` if it is neither empty nor an
    earlier vm-sim output directory."""
    with os.scandir(directory) as it:
        names = []
        for entry in it:
            names.append(entry.name)
            if len(names) >= limit:
                break
    if not names or earlier_output(directory):
        return []
    return sorted(names)


def output_dir(scn, out_arg, force: bool = False) -> Path:
    """The output directory, created and checked writable; ``UsageError`` otherwise.

    Without ``--out`` it is ``out/<scenario name>``: the name must be a plain file name and the
    directory must resolve inside ``out/`` (no ``..``, no absolute path, no link leaving it).
    Either way it must not be, or resolve (through symbolic links) into, a system directory
    (:data:`SYSTEM_TREES`, :data:`SYSTEM_DIRS`, the home directory), and an existing
    directory must be empty or hold an earlier run's output, unless ``force``."""
    if out_arg is not None:
        out, flag = Path(out_arg), "--out"
        if str(out_arg).strip() == "":
            raise UsageError("--out: empty directory name")
    else:
        if not SAFE_NAME.fullmatch(scn.name) or scn.name in (".", ".."):
            raise UsageError(f"scenario: the name {scn.name!r} cannot be the output directory "
                             f"out/<name> (use letters, digits, '_', '.', '-'); pass --out DIR")
        out, flag = Path("out") / scn.name, "output directory"
        if not out.resolve().is_relative_to(Path("out").resolve()):   # before touching it
            raise UsageError(f"output directory: {str(out)!r} resolves to "
                             f"{str(out.resolve())!r}, outside out/; pass --out DIR")
    real = Path(os.path.realpath(out))
    system = system_directory(real)
    if system is not None:
        where = "" if str(real) == str(out) else f" (it resolves to {str(real)!r})"
        raise UsageError(f"{flag}: {str(out)!r} is a system directory or lies in one "
                         f"({system}){where}; vm-sim writes only into directories of your own")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag}: {str(out)!r} exists and is not a directory")
    try:
        if out.is_dir() and not force:
            foreign = foreign_entries(out)
            if foreign:
                raise UsageError(f"{flag}: {str(out)!r} already holds files that are not an "
                                 f"earlier vm-sim run's ({', '.join(foreign)}, ...); choose a "
                                 f"new or empty directory, or pass --force to write there")
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".vm-sim-write-test.")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write in {str(out)!r}: "
                         f"{exc.strerror or exc}") from None
    return out
