"""Generate → validate: templated problems and a validity filter that recomputes answers with sympy.

A problem is a dict ``{"problem_id", "text", "answer", "check", "generator"}``. ``check`` is a
structured spec ``{"op": ..., "args": [...]}`` that :func:`validate_problem` recomputes with sympy
(arithmetic strings are parsed by a whitelist AST walker, never ``eval``). The templates compute their
own answers with plain Python (closed forms, brute force), a code path independent of the
validator's. Problems without a checkable spec go to another model (``checker=``), never to the
one that generated them.

``mathematics-dataset`` 1.0.1 is reachable only through :func:`mathematics_dataset_problems`, a shim
(it fails to import with current sympy and on NumPy 2 for several modules).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping

import numpy as np
import sympy

from paperworks import check_float, check_int

_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}
_SYMS = {"x": sympy.Symbol("x"), "k": sympy.Symbol("k")}


def safe_expr(text: str):
    """Parse ``text`` (numbers, ``x``, ``k``, + − × / ** and parentheses) into a sympy expression."""
    if not isinstance(text, str) or len(text) > 500:
        raise ValueError(f"expression must be a string of at most 500 characters, got {text!r}")

    def walk(n):
        if isinstance(n, ast.Expression):
            return walk(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool):
            return sympy.Rational(str(n.value)) if isinstance(n.value, float) else sympy.Integer(n.value)
        if isinstance(n, ast.Name) and n.id in _SYMS:
            return _SYMS[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            left, right = walk(n.left), walk(n.right)
            if isinstance(n.op, ast.Pow) and (not right.is_number or abs(right) > 10_000):
                raise ValueError("exponent must be a number of at most 10000")
            return _BIN[type(n.op)](left, right)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = walk(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        raise ValueError(f"unsupported syntax in {text!r}: {type(n).__name__}")

    try:
        return walk(ast.parse(text.replace("^", "**"), mode="eval"))
    except SyntaxError:
        raise ValueError(f"cannot parse expression {text!r}") from None


def _ints(args, k):
    if len(args) != k or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        raise ValueError(f"expected {k} integer argument(s), got {args!r}")
    return [int(a) for a in args]


def _recompute(check: Mapping):
    """The answer of a check spec, by sympy."""
    op, args = check.get("op"), list(check.get("args", []))
    x, k = _SYMS["x"], _SYMS["k"]
    if op == "arith":
        return sympy.nsimplify(safe_expr(args[0]))
    if op == "gcd":
        a, b = _ints(args, 2)
        return sympy.gcd(a, b)
    if op == "lcm":
        a, b = _ints(args, 2)
        return sympy.lcm(a, b)
    if op == "divisor_count":
        (n,) = _ints(args, 1)
        return sympy.divisor_count(n)
    if op == "mod_pow":
        a, b, m = _ints(args, 3)
        return sympy.Mod(sympy.Integer(a) ** b, m)
    if op == "root_sum":
        return sympy.Add(*sympy.roots(sympy.Poly(safe_expr(args[0]), x), multiple=True))
    if op == "derivative_at":
        return sympy.diff(safe_expr(args[0]), x).subs(x, sympy.Integer(_ints(args[1:], 1)[0]))
    if op == "power_sum":
        p, n = _ints(args, 2)
        return sympy.summation(k ** p, (k, 1, n))
    raise ValueError(f"unknown check op {op!r}")


def _answer_value(answer):
    if isinstance(answer, bool):
        raise ValueError("answer must be a number or a numeric string")
    if isinstance(answer, (int, np.integer)):
        return sympy.Integer(int(answer))
    if isinstance(answer, (float, np.floating)):
        return sympy.nsimplify(float(answer))
    if isinstance(answer, str):
        return sympy.nsimplify(safe_expr(answer.strip()))
    raise ValueError(f"answer must be a number or a numeric string, got {type(answer).__name__}")


_NUMBER = re.compile(r"-?\d+(?:/\d+)?(?:\.\d+)?")


def validate_problem(problem, *, checker=None, checker_name: str | None = None) -> tuple[bool, str]:
    """Is the problem's stated answer right? ``(ok, reason)``.

    With a ``check`` spec the answer is recomputed by sympy. Otherwise ``checker`` (a chat model with
    ``complete(messages) -> str``, named ``checker_name``) is asked; it must not be the model that
    generated the problem (``problem["generator"]``).

    Raises:
        TypeError: ``problem`` is not a dict. ValueError: the checker is the generator.
    """
    if not isinstance(problem, Mapping):
        raise TypeError(f"problem must be a dict with 'text' and 'answer', got {type(problem).__name__}")
    if not isinstance(problem.get("text"), str) or not problem["text"].strip():
        return False, "no problem text"
    if problem.get("answer") is None:
        return False, "no answer to check"
    try:
        stated = _answer_value(problem["answer"])
    except ValueError as e:
        return False, f"unparseable answer: {e}"
    check = problem.get("check")
    if check:
        try:
            truth = _recompute(check)
        except (ValueError, TypeError, ZeroDivisionError) as e:
            return False, f"check could not be recomputed: {e}"
        if sympy.simplify(truth - stated) == 0:
            return True, "answer matches sympy"
        return False, f"answer {problem['answer']} != sympy {truth}"
    if checker is None:
        return False, "not checkable by sympy and no checker model given"
    gen = problem.get("generator")
    if gen is not None and checker_name is not None and str(gen) == str(checker_name):
        raise ValueError(f"checker_name: {checker_name!r} generated this problem; never let the generating "
                         "model validate its own problems")
    reply = checker.complete([{"role": "user", "content": f"Solve. Reply with the final number only.\n{problem['text']}"}])
    found = _NUMBER.findall(reply or "")
    if not found:
        return False, f"checker gave no number ({reply[:40]!r})"
    got = _answer_value(found[-1])
    return (True, "answer matches checker") if sympy.simplify(got - stated) == 0 else (
        False, f"answer {problem['answer']} != checker {found[-1]}")


# templates: each returns (text, answer computed in plain Python, check spec) ------------------------

def _t_gcd(r):
    g = int(r.integers(2, 30))
    a, b = g * int(r.integers(2, 40)), g * int(r.integers(2, 40))
    return f"What is the greatest common divisor of {a} and {b}?", math.gcd(a, b), {"op": "gcd", "args": [a, b]}


def _t_lcm(r):
    a, b = int(r.integers(4, 60)), int(r.integers(4, 60))
    return f"What is the least common multiple of {a} and {b}?", a * b // math.gcd(a, b), {"op": "lcm", "args": [a, b]}


def _t_divisors(r):
    n = int(r.integers(12, 2000))
    return (f"How many positive divisors does {n} have?", sum(1 for i in range(1, n + 1) if n % i == 0),
            {"op": "divisor_count", "args": [n]})


def _t_modpow(r):
    a, b, m = int(r.integers(2, 20)), int(r.integers(10, 300)), int(r.integers(3, 17))
    return f"What is the remainder when {a}^{b} is divided by {m}?", pow(a, b, m), {"op": "mod_pow", "args": [a, b, m]}


def _t_roots(r):
    p, q = int(r.integers(-9, 10)), int(r.integers(-9, 10))
    poly = f"x**2 - ({p + q})*x + ({p * q})"
    return (f"Find the sum of the roots of x^2 - ({p + q})x + ({p * q}) = 0.", p + q,
            {"op": "root_sum", "args": [poly]})


def _t_derivative(r):
    a, b, c, x0 = (int(r.integers(-5, 6)) for _ in range(4))
    poly = f"{a}*x**3 + {b}*x**2 + {c}*x"
    return (f"Let f(x) = {a}x^3 + {b}x^2 + {c}x. Compute f'({x0}).", 3 * a * x0 ** 2 + 2 * b * x0 + c,
            {"op": "derivative_at", "args": [poly, x0]})


def _t_power_sum(r):
    p, n = int(r.integers(1, 4)), int(r.integers(5, 60))
    return (f"Compute the sum of k^{p} for k from 1 to {n}.", sum(i ** p for i in range(1, n + 1)),
            {"op": "power_sum", "args": [p, n]})


def _t_arith(r):
    a, b, c = int(r.integers(11, 99)), int(r.integers(11, 99)), int(r.integers(2, 500))
    return f"Compute {a} * {b} - {c}.", a * b - c, {"op": "arith", "args": [f"{a} * {b} - {c}"]}


TEMPLATES = (_t_gcd, _t_lcm, _t_divisors, _t_modpow, _t_roots, _t_derivative, _t_power_sum, _t_arith)


def templated_problems(n: int, *, seed=None, wrong_fraction: float = 0.0, generator: str = "template") -> list[dict]:
    """``n`` templated problems with answers; a ``wrong_fraction`` of them get a wrong answer planted.

    Each dict has ``problem_id`` (``g000``...), ``text``, ``answer``, ``check``, ``generator`` and
    ``planted_wrong`` (ground truth for tests of the filter).
    """
    n = check_int(n, "n", minimum=1)
    wrong_fraction = check_float(wrong_fraction, "wrong_fraction", minimum=0.0, maximum=1.0)
    rng = np.random.default_rng(seed)
    n_wrong = int(round(wrong_fraction * n))
    wrong = np.zeros(n, bool)
    wrong[rng.choice(n, n_wrong, replace=False)] = True
    out = []
    for i in range(n):
        text, ans, check = TEMPLATES[i % len(TEMPLATES)](rng)
        if wrong[i]:
            ans = ans + int(rng.choice([-1, 1])) * int(rng.integers(1, 10))
        out.append({"problem_id": f"g{i:03d}", "text": text, "answer": str(ans), "check": check,
                    "generator": generator, "planted_wrong": bool(wrong[i])})
    return out


def mathematics_dataset_problems(module: str, n: int, *, seed: int = 0) -> list[dict]:  # pragma: no cover
    """Problems from DeepMind's ``mathematics-dataset`` 1.0.1 (optional; not a declared dependency).

    The package fails to import with current sympy and 9 of its 56 modules fail on NumPy 2, so this
    shim imports it lazily and says so. Its problems carry no sympy check spec: validate them with
    ``validate_problem(p, checker=..., checker_name=...)`` and another model.
    """
    try:
        from mathematics_dataset import generate as md_generate  # noqa: F401
        from mathematics_dataset.modules import modules as md_modules
    except Exception as e:  # any import failure of an optional, broken-on-modern-stacks package
        raise ImportError("mathematics-dataset (1.0.1) is not importable here: it needs an old sympy and "
                          f"NumPy < 2 ({type(e).__name__}: {e}); use templated_problems instead") from None
    check_int(n, "n", minimum=1)
    np.random.seed(seed)
    group, _, name = module.partition("__")
    fns = md_modules.train(md_modules._make_entropy_fn(0, 1))
    if group not in fns or name not in fns[group]:
        raise ValueError(f"unknown mathematics-dataset module {module!r}")
    out = []
    for i in range(n):
        p = fns[group][name]()
        out.append({"problem_id": f"md{i:03d}", "text": str(p.question), "answer": str(p.answer), "check": None,
                    "generator": "mathematics-dataset"})
    return out
