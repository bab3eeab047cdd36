"""Expand one ``.xacro`` file inside a budget: the child process of :mod:`.xacro_expansion`.

Run as a script (``python xacro_worker.py REQUEST_JSON``) so that it needs only the standard
library and the ``xacro`` package (no numpy, no vm_dynamics import: a start costs ~0.1 s).
The request names the file, the mode and the budget; the process limits its own memory
(``RLIMIT_AS``), CPU time (``RLIMIT_CPU``) and, in ``safe`` mode, the size of files it may
write (``RLIMIT_FSIZE`` = 0), while the parent enforces the wall-clock limit by killing it.

Inside, xacro runs with two guards in every mode -- at most ``max_macro_calls`` macro
expansions and an output of at most ``max_bytes`` -- and, in ``safe`` mode, with
:func:`safe_eval_expr` in place of Python's ``eval``, only the substitutions of
:data:`SAFE_SUBSTITUTIONS`, and includes limited to regular files of at most ``max_bytes``.

Answer on stdout: ``OK\\n`` and the URDF (UTF-8), or ``ERR\\n`` and a message; anything xacro
prints goes to stderr (the parent forwards warnings).
"""
from __future__ import annotations

import ast
import json
import math
import operator as op
import os
import re
import sys

__all__ = ["SAFE_XACRO_FUNCTIONS", "SAFE_SUBSTITUTIONS", "MAX_INT_BITS", "MAX_STRING_CHARS",
           "MAX_LIST_ITEMS", "MAX_EXPRESSION_CHARS", "MAX_FORMAT_WIDTH", "safe_eval_expr", "main"]

#: Functions and constants a ``${…}`` expression may use with ``xacro="safe"``.
SAFE_XACRO_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                        "tanh", "sqrt", "exp", "log", "log10", "radians", "degrees", "fabs",
                        "floor", "ceil", "hypot", "pow", "copysign", "abs", "min", "max",
                        "round", "int", "float", "bool", "str", "len")
#: The ``$(…)`` substitutions ``xacro="safe"`` allows.
SAFE_SUBSTITUTIONS = ("arg", "find", "cwd", "dirname")
#: Size bounds of every value a safe expression computes (operands are checked before an
#: operation whose result could exceed them, so no step builds a huge number or string).
MAX_INT_BITS = 1024            # integers beyond ±2**1024 (larger than any double) are refused
MAX_STRING_CHARS = 10_000
MAX_LIST_ITEMS = 1_000
MAX_EXPRESSION_CHARS = 10_000
MAX_FORMAT_WIDTH = 100         # of a '%' conversion ('%8.3f'; '%099999999d' is refused)

_FORMAT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")

_BIN_OPS = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv,
            ast.FloorDiv: op.floordiv, ast.Mod: op.mod, ast.Pow: op.pow}
_CMP_OPS = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt,
            ast.GtE: op.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BUILTINS = {"abs": abs, "min": min, "max": max, "round": round, "int": int, "float": float,
             "bool": bool, "str": str, "len": len}
_FUNCS = {name: getattr(math, name) for name in SAFE_XACRO_FUNCTIONS if hasattr(math, name)}
_FUNCS.update(_BUILTINS)
_CONSTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan,
           "True": True, "False": False}


def _plain(v, what):
    """``v`` if it is a number, a string or a short list of them within the size bounds."""
    if isinstance(v, bool) or isinstance(v, float):
        return v
    if isinstance(v, int):
        if v.bit_length() > MAX_INT_BITS:
            raise ValueError(f"{what} is an integer of {v.bit_length()} bits; at most "
                             f"{MAX_INT_BITS} are allowed")
        return v
    if isinstance(v, str):
        if len(v) > MAX_STRING_CHARS:
            raise ValueError(f"{what} is a string of {len(v)} characters; at most "
                             f"{MAX_STRING_CHARS} are allowed")
        return v
    if isinstance(v, (list, tuple)):
        if len(v) > MAX_LIST_ITEMS:
            raise ValueError(f"{what} is a list of {len(v)} items; at most {MAX_LIST_ITEMS} "
                             f"are allowed")
        return [_plain(x, f"an item of {what}") for x in v]
    raise ValueError(f"{what} is a {type(v).__name__}, not a number or string")


def _int_bits(x) -> int:
    return abs(x).bit_length() if isinstance(x, int) and not isinstance(x, bool) else 0


def _binop(kind, a, b):
    """``a <op> b`` with the result's size bounded before it is computed."""
    if kind is ast.Mult and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        raise ValueError("repetition of a string or list is not allowed")
    if kind is ast.Mod and isinstance(a, str):
        for m in _FORMAT_SPEC.finditer(a):
            if "*" in m.group(0) or any(int(g or 0) > MAX_FORMAT_WIDTH for g in m.groups()):
                raise ValueError(f"format {m.group(0)!r}: widths and precisions above "
                                 f"{MAX_FORMAT_WIDTH} (or '*') are not allowed")
    if kind is ast.Pow and _int_bits(a) and isinstance(b, int) and not isinstance(b, bool):
        if b > 0 and _int_bits(a) > 1 and _int_bits(a) * b > MAX_INT_BITS + _int_bits(a):
            a = float(a)                 # as a double: overflows to an error, never a huge int
    if kind is ast.Mult and _int_bits(a) + _int_bits(b) > MAX_INT_BITS + 1:
        raise ValueError(f"integer product of {_int_bits(a)} and {_int_bits(b)} bits exceeds "
                         f"{MAX_INT_BITS} bits")
    return _BIN_OPS[kind](a, b)


# complexity: a whitelist of AST node types, one branch each: flat reads best
def _eval_node(node, symbols):  # noqa: C901
    ev = _eval_node
    if isinstance(node, ast.Expression):
        return ev(node.body, symbols)
    if isinstance(node, ast.Constant):
        return _plain(node.value, "constant")
    if isinstance(node, (ast.List, ast.Tuple)):
        if len(node.elts) > MAX_LIST_ITEMS:
            raise ValueError(f"a list of {len(node.elts)} items; at most {MAX_LIST_ITEMS}")
        return _plain([ev(e, symbols) for e in node.elts], "list")
    if isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise ValueError(f"name {node.id!r} is not allowed")
        if node.id in _CONSTS and node.id not in symbols:
            return _CONSTS[node.id]
        try:
            v = symbols[node.id]
        except KeyError:
            if node.id in _CONSTS:
                return _CONSTS[node.id]
            raise ValueError(f"undefined property {node.id!r}") from None
        return _plain(v, f"property {node.id!r}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN_OPS:
        a, b = ev(node.left, symbols), ev(node.right, symbols)
        return _plain(_binop(type(node.op), a, b), f"{ast.unparse(node)!r}")
    if isinstance(node, ast.UnaryOp):
        v = ev(node.operand, symbols)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Not):
            return not v
    if isinstance(node, ast.BoolOp):
        vals = [ev(v, symbols) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = (out and v) if isinstance(node.op, ast.And) else (out or v)
        return out
    if isinstance(node, ast.Compare):
        left = ev(node.left, symbols)
        for o, c in zip(node.ops, node.comparators):
            if type(o) not in _CMP_OPS:
                raise ValueError(f"comparison {type(o).__name__} is not allowed")
            right = ev(c, symbols)
            if not _CMP_OPS[type(o)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return ev(node.body, symbols) if ev(node.test, symbols) else ev(node.orelse, symbols)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "math" and not node.attr.startswith("_"):
        if node.attr in _CONSTS:
            return _CONSTS[node.attr]
        if node.attr in _FUNCS:
            return _FUNCS[node.attr]
    if isinstance(node, ast.Call) and not node.keywords:
        f = node.func
        name = f.id if isinstance(f, ast.Name) else (
            f.attr if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            and f.value.id == "math" else None)
        if name in _FUNCS:
            args = [ev(a, symbols) for a in node.args]
            if name == "int" and len(args) > 1:
                raise ValueError("int() with a base is not allowed")
            if name == "round" and len(args) > 1 and isinstance(args[1], int) \
                    and abs(args[1]) > 400:
                raise ValueError(f"round(..., {args[1]}): at most 400 digits")
            return _plain(_FUNCS[name](*args), f"{name}(...)")
        raise ValueError(f"call of {ast.unparse(f)!r} is not allowed")
    raise ValueError(f"{type(node).__name__} {ast.unparse(node)!r} is not allowed")


def safe_eval_expr(expr: str, symbols):
    """Evaluate a xacro ``${…}`` expression with arithmetic only: numbers, strings, lists,
    properties, ``+ - * / // % **``, comparisons, ``a if c else b``, ``and``/``or``/``not``
    and the functions of :data:`SAFE_XACRO_FUNCTIONS` (also as ``math.<name>``); no other
    attribute access or call, no comprehension, lambda, subscript or dunder name.  Every
    value stays within :data:`MAX_INT_BITS`, :data:`MAX_STRING_CHARS` and
    :data:`MAX_LIST_ITEMS`.  Raises ``ValueError`` naming the construct or the bound."""
    text = str(expr).strip()
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"xacro='safe': an expression of {len(text)} characters; at most "
                         f"{MAX_EXPRESSION_CHARS} are allowed")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"invalid expression {_short(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"xacro='safe': expression {_short(text)} is nested too deeply") \
            from None
    try:
        return _eval_node(tree, symbols)
    except RecursionError:
        raise ValueError(f"xacro='safe': expression {_short(text)} is nested too deeply") \
            from None
    except OverflowError:
        raise ValueError(f"xacro='safe': expression {_short(text)}: the result is out of range "
                         f"(beyond a double, or an integer beyond {MAX_INT_BITS} bits)") from None
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise ValueError(f"xacro='safe': expression {_short(text)}: {exc}") from None


def _short(text, limit=80):
    r = repr(text)
    return r if len(r) <= limit else r[:limit - 3] + "..."


class BudgetExceeded(Exception):
    """The expansion went over one of its bounds (macro calls, output size)."""


def _install_guards(pkg, mode: str, max_macro_calls: int, max_bytes: int) -> None:
    """Wrap xacro's macro expansion (a call count), file parsing (regular files of bounded
    size in safe mode), and in safe mode its evaluator and substitutions.  xacro looks these
    functions up as module globals at each call, so replacing them here takes effect."""
    calls = [0]
    orig_macro_call = pkg.handle_macro_call

    def handle_macro_call(node, macros, symbols):
        if node.tagName.startswith("xacro:"):
            calls[0] += 1
            if calls[0] > max_macro_calls:
                raise BudgetExceeded(f"more than {max_macro_calls} macro expansions (the budget "
                                     f"of one expansion; a macro that calls itself, or calls "
                                     f"another several times at each level?)")
        return orig_macro_call(node, macros, symbols)

    pkg.handle_macro_call = handle_macro_call
    if mode != "safe":
        return
    orig_parse, orig_ext = pkg.parse, pkg.eval_extension

    def parse(inp, filename=None):
        if inp is None and filename is not None:
            path = os.path.join(pkg.root_dir, filename)
            if not os.path.isfile(path):
                raise pkg.XacroException(f"xacro='safe': {filename} is not a regular file")
            if os.path.getsize(path) > max_bytes:
                raise BudgetExceeded(f"{filename} is larger than {max_bytes} bytes")
        return orig_parse(inp, filename)

    def safe_eval(expr, globals, locals=None):
        return safe_eval_expr(expr, globals if locals is None else locals)

    def eval_extension(s):
        body = s[2:-1].strip() if s.startswith("$(") and s.endswith(")") else s
        cmd = body.split(None, 1)[0] if body else ""
        if cmd not in SAFE_SUBSTITUTIONS:
            raise ValueError(f"xacro='safe': substitution $({cmd} …) is not allowed (only "
                             f"{', '.join('$(' + c + ')' for c in SAFE_SUBSTITUTIONS)})")
        return orig_ext(s)

    pkg.parse, pkg.safe_eval, pkg.eval_extension = parse, safe_eval, eval_extension


def _limit_resources(memory_bytes: int, cpu_seconds: int, mode: str) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX: the parent's wall-clock limit remains
        return
    for which, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_CORE, 0)) + (
                            ((resource.RLIMIT_FSIZE, 0),) if mode == "safe" else ()):
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):  # pragma: no cover - a limit this system refuses
            pass


def expand(path: str, mode: str, max_macro_calls: int, max_bytes: int) -> tuple[bytes, list]:
    """The expanded URDF of ``path`` (UTF-8) and the files it included."""
    import xacro as pkg
    _install_guards(pkg, mode, max_macro_calls, max_bytes)
    doc = pkg.process_file(path)
    xml = doc.toprettyxml(indent="  ").encode("utf-8")
    if len(xml) > max_bytes:
        raise BudgetExceeded(f"the expanded URDF has {len(xml)} bytes; at most {max_bytes} "
                             f"are allowed")
    return xml, [os.path.abspath(f) for f in getattr(pkg, "all_includes", [])]


def _causes(exc: BaseException):
    """``exc`` and the exceptions it wraps (xacro keeps the original in ``.exc``)."""
    seen = []
    while exc is not None and exc not in seen and len(seen) < 50:
        seen.append(exc)
        exc = getattr(exc, "exc", None) or exc.__cause__ or exc.__context__
    return seen


def _message(exc: BaseException, memory_bytes: int) -> str:
    """One line for the parent: the bound that was hit, or xacro's own message."""
    text = " ".join(str(exc).split())
    detail = f" ({text[:160]}{'...' if len(text) > 160 else ''})" if text else ""
    for cause in _causes(exc):
        if isinstance(cause, MemoryError):
            return (f"needs more than {memory_bytes // 2**20} MiB of memory (the budget of one "
                    f"expansion){detail}")
        if isinstance(cause, RecursionError):
            return f"nested too deeply (a macro or include that refers to itself?){detail}"
    return text or type(exc).__name__


def main(argv=None) -> int:
    """Read the request, expand, answer on the original stdout (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # model/*.py
    req = json.loads(argv[0])
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                      # whatever xacro or an expression prints: to stderr
    sys.stdout = sys.stderr
    _limit_resources(int(req["memory_bytes"]), int(req["cpu_seconds"]), req["mode"])
    try:
        xml, includes = expand(req["path"], req["mode"], int(req["max_macro_calls"]),
                               int(req["max_bytes"]))
        answer = b"OK\n" + json.dumps(includes).encode() + b"\n" + xml
    except BaseException as exc:   # noqa: BLE001 - every failure is reported as a message
        answer = b"ERR\n" + _message(exc, int(req["memory_bytes"])).encode("utf-8", "replace")
    out.write(answer)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
