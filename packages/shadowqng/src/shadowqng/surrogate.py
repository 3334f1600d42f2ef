r"""The locality-aware QFIM surrogate: truncated propagated generators, support mask, one shadow set.

For a circuit :math:`U = W_L \cdots W_1` with trainable gates :math:`W_p = e^{-i\theta_p G_p}`, the
derivative of the output state is :math:`\partial_p|\psi\rangle = -i K_p|\psi\rangle` with the
*propagated generator* :math:`K_p = V_p G_p V_p^\dagger`, :math:`V_p` the gates after :math:`W_p`.
The quantum Fisher information matrix is then a covariance (claim 1 of the paper):

.. math:: F_{pq} = 4\left(\tfrac12\langle\{K_p, K_q\}\rangle - \langle K_p\rangle\langle K_q\rangle\right).

The surrogate (the design follows the paper's abstract; no paper text or code is public):

1. **weight-k truncation** — :math:`G_p` is conjugated gate by gate in the Heisenberg picture
   (Clifford gates map Pauli strings to Pauli strings; a Pauli rotation :math:`e^{-i\phi P/2}` maps an
   anticommuting :math:`Q` to :math:`\cos\phi\,Q + \sin\phi\,iQP`) and strings of weight :math:`>k` are
   dropped after every gate;
2. **support-overlap mask** — entries whose truncated generators act on disjoint qubits are set to
   zero, not estimated (exact for product states);
3. **one classical-shadow data set** — every retained entry is a linear combination of Pauli
   expectations, all estimated from the same random-Pauli snapshots (median of means for
   :math:`\langle\{K_p,K_q\}\rangle`, an unbiased cross-group product for :math:`\langle K_p\rangle\langle K_q\rangle`);
4. **active set** — parameters whose truncated generator is non-zero get the natural-gradient step
   with the regularised, PSD-projected surrogate; the others get plain gradient descent.

Inferred details (not stated in the abstract): truncation after every gate, the PSD projection,
the cross-group product estimator, and the Fubini–Study scale (:math:`F/4`) in the optimizer so
that ``stepsize`` means what it means in ``qml.QNGOptimizer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pennylane as qml
import scipy.linalg
import scipy.sparse

from paperworks import check_float, check_int
from shadowqng.circuit import BASIS_ROTATIONS, Circuit, circuit_from_tape, expand_tape, rotate_each
from shadowqng.ledger import ShotLedger
from shadowqng.pauli import PauliTerms, anticommutes, codes, from_codes, product_phase, string_keys


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int (the Pauli-weight truncation), got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return int(k)


def _check_shots(shots, name: str = "shots"):
    """``None`` (exact expectations) or an int >= 2: the estimate needs two groups of snapshots."""
    return check_int(shots, name, minimum=2, optional=True)


def _check_groups(groups) -> int:
    return check_int(groups, "groups", minimum=2)


def _check_lam(lam) -> float:
    """``lam`` > 0, finite: it regularises a PSD-projected metric, so 0 would divide by its null space."""
    return check_float(lam, "lam", minimum=0.0, open_minimum=True)


# 1. Heisenberg propagation with truncation ---------------------------------------------------------

def _conjugate_rotation(t: PauliTerms, gx, gz, phi) -> PauliTerms:
    anti = anticommutes(t.x, t.z, gx[None], gz[None])
    if not anti.any():
        return t
    a = t.select(anti)
    g = product_phase(a.x, a.z, np.broadcast_to(gx, a.x.shape), np.broadcast_to(gz, a.z.shape))
    real = np.where(np.mod(g + 1, 4) == 0, 1.0, -1.0)  # i^{g+1}, real because Q and P anticommute
    phi_a = phi[a.owner] if np.ndim(phi) else phi
    branch = PauliTerms(a.x ^ gx, a.z ^ gz, a.coef * np.sin(phi_a) * real, a.owner)
    coef = t.coef.copy()
    coef[anti] *= np.cos(phi_a)
    return PauliTerms(t.x, t.z, coef, t.owner).concat(branch)


def _conjugate_clifford(t: PauliTerms, wires, table) -> PauliTerms:
    image, sign = table
    m = len(wires)
    c = codes(t.x[:, list(wires)], t.z[:, list(wires)]).astype(np.int64)
    idx = c @ (4 ** np.arange(m - 1, -1, -1))
    out = image[idx]
    new = np.stack([(out // 4 ** (m - 1 - i)) % 4 for i in range(m)], axis=1)
    nx, nz = from_codes(new)
    x, z = t.x.copy(), t.z.copy()
    x[:, list(wires)] = nx
    z[:, list(wires)] = nz
    return PauliTerms(x, z, t.coef * sign[idx], t.owner)


def propagate_generators(circ: Circuit, theta, k: int) -> PauliTerms:
    """Truncated propagated generators :math:`K_p` of every trainable parameter (``owner = p``).

    Args:
        circ: the circuit (see :func:`shadowqng.circuit.circuit_from_tape`).
        theta: shape ``(circ.n_params,)``.
        k: Pauli-weight truncation, ``k >= 1``; ``k = n`` is exact.

    Returns:
        :class:`~shadowqng.pauli.PauliTerms`; a parameter with no terms left is inactive.
    """
    k = _check_k(k)
    theta = np.asarray(theta, dtype=float).ravel()
    if theta.shape != (circ.n_params,):
        raise ValueError(f"params must have shape ({circ.n_params},), got {theta.shape}")
    gens = {gi: t for gi, _, t in circ.generator_terms()}
    terms = PauliTerms.empty(circ.n_qubits)
    for gi, g in enumerate(circ.gates):
        if len(terms):
            if g.kind == "rot":
                phi = g.scale * theta[g.param] if g.param is not None else g.angle
                terms = _conjugate_rotation(terms, g.x, g.z, phi)
            else:
                terms = _conjugate_clifford(terms, g.wires, g.table)
            terms = terms.simplify().truncate(k)
        if gi in gens:
            terms = terms.concat(gens[gi].truncate(k))
    return terms


# 2. support mask and active set ---------------------------------------------------------------------

def support_mask(terms: PauliTerms, n_params: int) -> tuple[np.ndarray, np.ndarray]:
    """``(active, mask)``: parameters with non-zero truncated generators, and the ``(P, P)`` boolean
    matrix of pairs whose generators share at least one qubit (``False`` outside the active set)."""
    supp = np.zeros((n_params, terms.n_qubits), bool)
    np.logical_or.at(supp, terms.owner, terms.x | terms.z)
    active = np.zeros(n_params, bool)
    active[np.unique(terms.owner)] = True
    mask = (supp.astype(np.int64) @ supp.T.astype(np.int64)) > 0
    mask &= active[:, None] & active[None, :]
    return active, mask


# 3. the linear map from Pauli expectations to the entries -------------------------------------------

@dataclass
class SurrogatePlan:
    """Everything the estimate needs: the distinct strings and two sparse maps onto them."""

    n_params: int
    active: np.ndarray  # (P,)
    mask: np.ndarray  # (P, P)
    pairs: np.ndarray  # (E, 2) retained (p, q), p <= q
    x: np.ndarray  # (R, n) distinct strings
    z: np.ndarray
    second: scipy.sparse.csr_matrix  # (E, R): ½<{K_p, K_q}>
    first: scipy.sparse.csr_matrix  # (P, R): <K_p>

    @property
    def n_strings(self) -> int:
        return self.x.shape[0]


def build_plan(terms: PauliTerms, n_params: int, use_mask: bool = True) -> SurrogatePlan:
    """Enumerate the products ``P_a Q_b`` of commuting string pairs of the retained entries."""
    active, mask = support_mask(terms, n_params)
    if not use_mask:
        mask = active[:, None] & active[None, :]
    pairs = np.argwhere(np.triu(mask))
    n = terms.n_qubits
    order = np.argsort(terms.owner, kind="stable")
    terms_sorted = terms.select(order)
    bounds = np.searchsorted(terms_sorted.owner, np.arange(n_params + 1))
    pair_index = np.full((n_params, n_params), -1, np.int64)
    pair_index[pairs[:, 0], pairs[:, 1]] = np.arange(len(pairs))
    rows_x, rows_z, ent, cf = [], [], [], []
    for p in np.flatnonzero(active):
        a = np.arange(bounds[p], bounds[p + 1])
        partners = np.flatnonzero(mask[p, p:]) + p
        if not len(partners):
            continue
        b = np.concatenate([np.arange(bounds[q], bounds[q + 1]) for q in partners])
        ia, ib = np.repeat(a, len(b)), np.tile(b, len(a))
        ts = terms_sorted
        x1, z1, x2, z2 = ts.x[ia], ts.z[ia], ts.x[ib], ts.z[ib]
        comm = ~anticommutes(x1, z1, x2, z2)  # anticommuting pairs cancel in the anticommutator
        ia, ib, x1, z1, x2, z2 = ia[comm], ib[comm], x1[comm], z1[comm], x2[comm], z2[comm]
        g = product_phase(x1, z1, x2, z2)  # 0 or 2 for commuting strings
        rows_x.append(x1 ^ x2)
        rows_z.append(z1 ^ z2)
        cf.append(ts.coef[ia] * ts.coef[ib] * np.where(g == 0, 1.0, -1.0))
        ent.append(pair_index[p, ts.owner[ib]])
    # first moments use the generators' own strings
    rows_x.append(terms.x)
    rows_z.append(terms.z)
    allx = np.vstack(rows_x) if rows_x else np.zeros((0, n), bool)
    allz = np.vstack(rows_z) if rows_z else np.zeros((0, n), bool)
    keys = string_keys(allx, allz)
    uniq, first_idx, inv = np.unique(keys, return_index=True, return_inverse=True)
    inv = inv.ravel()
    n_second = sum(len(c) for c in cf)
    r = len(uniq)
    second = scipy.sparse.csr_matrix(
        (np.concatenate(cf) if cf else np.zeros(0), (np.concatenate(ent) if ent else np.zeros(0, int),
                                                      inv[:n_second])), shape=(len(pairs), r))
    first = scipy.sparse.csr_matrix((terms.coef, (terms.owner, inv[n_second:])), shape=(n_params, r))
    return SurrogatePlan(n_params, active, mask, pairs, allx[first_idx], allz[first_idx], second, first)


# expectations of the distinct strings ------------------------------------------------------------

def exact_expectations(x: np.ndarray, z: np.ndarray, state: np.ndarray) -> np.ndarray:
    """``<ψ|P|ψ>`` for each string (wire 0 = most significant bit of the state index)."""
    n = x.shape[1]
    w = 1 << np.arange(n - 1, -1, -1)
    xm = (x.astype(np.int64) @ w)[:, None]
    zm = (z.astype(np.int64) @ w)[:, None]
    y = np.sum(x & z, axis=1)[:, None]
    idx = np.arange(state.shape[0])[None, :]
    perm = idx ^ xm
    sign = 1 - 2 * (np.bitwise_count(idx & zm).astype(np.int64) & 1)
    vals = np.conj(state[perm]) * state[idx] * sign  # P|b> = i^y (-1)^{b·z} |b ^ x>
    return np.real((1j ** y).ravel() * np.sum(vals, axis=1)) if n else np.ones(x.shape[0])


def shadow_values(x: np.ndarray, z: np.ndarray, bits: np.ndarray, recipes: np.ndarray) -> np.ndarray:
    """Per-snapshot estimates ``(R, T)`` of each string from random-Pauli classical shadows.

    ``bits``/``recipes`` are PennyLane's ``qml.classical_shadow`` output, shape ``(T, n)``
    (recipe 0, 1, 2 = X, Y, Z basis). A string's snapshot value is ``Π_q 3·[basis matches]·(±1)``.
    """
    c = codes(x, z)  # (R, n)
    t = bits.shape[0]
    vals = np.ones((c.shape[0], t))
    for q in range(c.shape[1]):
        table = np.zeros((4, t))
        table[0] = 1.0
        table[recipes[:, q] + 1, np.arange(t)] = 3.0 * (1 - 2 * bits[:, q].astype(float))
        vals *= table[c[:, q]]
    return vals


def shadow_estimate(plan: SurrogatePlan, bits, recipes, groups: int = 10, median: bool = True) -> np.ndarray:
    """The surrogate ``(P, P)`` from one shadow data set; ``groups`` ≥ 2 blocks of snapshots."""
    bits = np.asarray(bits)
    recipes = np.asarray(recipes)
    t = bits.shape[0]
    if groups < 2 or groups > t:
        raise ValueError(f"groups must be in [2, number of snapshots={t}], got {groups}")
    vals = shadow_values(plan.x, plan.z, bits, recipes)
    blocks = np.array_split(np.arange(t), groups)
    means = np.stack([vals[:, b].mean(axis=1) for b in blocks], axis=1)  # (R, G)
    sec = plan.second @ means  # (E, G)
    sec = np.median(sec, axis=1) if median else sec.mean(axis=1)
    fm = plan.first @ means  # (P, G)
    s = fm.sum(axis=1)
    prod = (np.outer(s, s) - fm @ fm.T) / (groups * (groups - 1))  # unbiased <K_p><K_q>
    return _assemble(plan, sec, prod)


def exact_estimate(plan: SurrogatePlan, state: np.ndarray) -> np.ndarray:
    """The surrogate ``(P, P)`` with exact expectations (no shots)."""
    ev = exact_expectations(plan.x, plan.z, np.asarray(state).ravel())
    fm = plan.first @ ev
    return _assemble(plan, plan.second @ ev, np.outer(fm, fm))


def _assemble(plan: SurrogatePlan, sec: np.ndarray, prod: np.ndarray) -> np.ndarray:
    f = np.zeros((plan.n_params, plan.n_params))
    if len(plan.pairs):
        p, q = plan.pairs[:, 0], plan.pairs[:, 1]
        vals = 4.0 * (sec - prod[p, q])
        f[p, q] = vals
        f[q, p] = vals
    return f


# 4. the regularised active-set step -------------------------------------------------------------

def natural_direction(grad, metric, active, lam: float) -> np.ndarray:
    r"""``d_A = (\Pi_{\succeq 0}(M_{AA}) + \lambda I)^{-1} g_A`` on the active set, ``d = g`` elsewhere."""
    g = np.asarray(grad, dtype=float).ravel()
    d = g.copy()
    a = np.flatnonzero(active)
    if len(a):
        w, v = scipy.linalg.eigh(np.asarray(metric)[np.ix_(a, a)])
        w = np.clip(w, 0.0, None) + lam
        d[a] = v @ ((v.T @ g[a]) / w)
    return d


# the PennyLane front end ----------------------------------------------------------------------------

def _check_qnode(qnode):
    if not isinstance(qnode, qml.QNode):
        raise TypeError(f"cost must be a PennyLane QNode returning one expectation value, got {type(qnode).__name__}")


def _check_args(args):
    for i, a in enumerate(args):
        if getattr(a, "requires_grad", False) and not np.all(np.isfinite(np.asarray(qml.math.toarray(a), float))):
            raise ValueError(f"params: argument {i} has non-finite entries")


def _tape_of(qnode, args, kwargs):
    _check_args(args)
    try:
        tape = qml.workflow.construct_tape(qnode)(*args, **kwargs)
    except (IndexError, ValueError, TypeError) as e:
        shapes = [np.shape(a) for a in args]
        raise ValueError(f"params: the QNode could not be built at arguments of shapes {shapes} "
                         f"({type(e).__name__}: {e}); check their number and lengths") from e
    if len(tape.measurements) != 1 or not isinstance(tape.measurements[0], qml.measurements.ExpectationMP):
        raise TypeError("cost must be a QNode returning a single qml.expval(...); "
                        f"got measurements {tape.measurements}")
    return tape


def _arg_jacobian(qnode, args, kwargs):
    """``(J, argnums)``: the gate parameters of the decomposed tape (:func:`expand_tape`'s body), all of
    them, as a linear map of the flattened trainable args."""
    argnums = [i for i, a in enumerate(args) if getattr(a, "requires_grad", False)]
    if not argnums:
        raise ValueError("params: no trainable argument (use pennylane.numpy arrays with requires_grad=True)")
    jac = qml.gradients.classical_jacobian(qnode, argnum=argnums, expand_fn=lambda t: expand_tape(t)[1],
                                           trainable_only=False)(*args, **kwargs)
    jac = jac if isinstance(jac, tuple) else (jac,)
    mats = [np.asarray(j).reshape(np.asarray(j).shape[0], -1) for j in jac]
    return np.hstack(mats), argnums


def _pennylane_shapes(f, args, argnums):
    """``f`` ``(D, D)`` in ``qml.metric_tensor``'s layout: ``shape + shape`` for one trainable
    argument, a tuple of the diagonal blocks for several (PennyLane drops the cross blocks too)."""
    shapes = [np.shape(args[i]) for i in argnums]
    sizes = [int(np.prod(s)) for s in shapes]
    if len(shapes) == 1:
        return f.reshape(shapes[0] + shapes[0])
    out, pos = [], 0
    for s, m in zip(shapes, sizes):
        out.append(f[pos:pos + m, pos:pos + m].reshape(s + s))
        pos += m
    return tuple(out)


_SHADOW_METHODS = ("auto", "shadow", "state", "grouped")


def measure_shadow(ops, wires, snapshots: int, device, seed=None, method: str = "auto"):
    """``snapshots`` random-Pauli snapshots ``(bits, recipes)`` of the state prepared by ``ops``.

    ``method``:

    - ``"shadow"``: ``qml.classical_shadow`` on the device (``default.qubit``, ...);
    - ``"grouped"``: the recipes are drawn here and grouped; each distinct recipe is one circuit with
      its basis rotations appended, sampled (``qml.sample``) with as many shots as snapshots drew it,
      all circuits in one batch: what a device with shots, or hardware, runs;
    - ``"state"``: an analytic simulator (``lightning.qubit`` without shots) simulates the state once
      and the snapshots are drawn from it here, as ``default.qubit`` implements ``classical_shadow``;
    - ``"auto"``: ``shadow`` where the device accepts it, else ``state`` on a device without shots,
      else ``grouped``.

    In every case each snapshot is one shot in a uniformly random Pauli basis: the estimator's input
    and its shot cost are the same.
    """
    if method not in _SHADOW_METHODS:
        raise ValueError(f"method must be one of {_SHADOW_METHODS}, got {method!r}")
    ops = [qml.ops.functions.bind_new_parameters(op, [np.asarray(qml.math.toarray(d)) for d in op.data])
           if op.data else op for op in ops]  # plain arrays: no autodiff layer per circuit
    if method in ("auto", "shadow"):
        try:
            st = qml.tape.QuantumScript(ops, [qml.classical_shadow(wires=wires, seed=seed)], shots=snapshots)
            (res,) = qml.execute([st], device, diff_method=None)
            return np.asarray(res[0]).astype(np.int8), np.asarray(res[1]).astype(np.int8)
        except qml.exceptions.DeviceError:
            if method == "shadow":
                raise
    rng = np.random.default_rng(seed)
    recipes = rng.integers(0, 3, size=(snapshots, len(wires))).astype(np.int8)
    distinct, inverse, counts = np.unique(recipes, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    bits = np.zeros((snapshots, len(wires)), np.int8)
    if method in ("auto", "state"):
        try:
            (state,) = qml.execute([qml.tape.QuantumScript(ops, [qml.state()])], device, diff_method=None)
        except (qml.exceptions.DeviceError, qml.exceptions.QuantumFunctionError):
            if method == "state":
                raise
        else:
            return _sample_state(np.asarray(state).reshape(-1), wires, distinct, inverse, counts, rng, bits), recipes
    tapes = []
    for row, c in zip(distinct, counts):
        rot = []
        for w, r in zip(wires, row):
            if r == 1:
                rot.append(qml.adjoint(qml.S(wires=w)))
            if r in (0, 1):
                rot.append(qml.Hadamard(wires=w))
        tapes.append(qml.tape.QuantumScript(list(ops) + rot, [qml.sample(wires=wires)], shots=int(c)))
    res = qml.execute(tapes, device, diff_method=None)
    for g, r in enumerate(res):
        bits[inverse == g] = np.asarray(r).reshape(counts[g], len(wires))
    return bits, recipes


def _sample_state(state, wires, distinct, inverse, counts, rng, bits):
    """Outcomes of each distinct recipe drawn from the simulated state (wire 0 = most significant)."""
    n = len(wires)
    if state.shape != (2 ** n,):
        raise ValueError(f"the device returned a state of shape {state.shape} for {n} wires")
    psi = np.repeat(state[None], len(distinct), axis=0)
    for q in range(n):
        psi = rotate_each(psi, BASIS_ROTATIONS[distinct[:, q]], q, n)
    probs = np.abs(psi) ** 2
    shifts = np.arange(n - 1, -1, -1)
    for g, c in enumerate(counts):
        out = rng.choice(2 ** n, size=int(c), p=probs[g] / probs[g].sum())
        bits[inverse == g] = (out[:, None] >> shifts) & 1
    return bits


def surrogate_qfim(qnode, *args, k: int = 2, shots: int | None = None, mask: bool = True, groups: int = 10,
                   median: bool = True, seed=None, ledger: ShotLedger | None = None, log: bool = False,
                   flat: bool = False, **kwargs):
    r"""The shadow-QFIM surrogate of a QNode at ``args``, in the space of the flattened trainable args.

    Args:
        qnode: a QNode returning one ``qml.expval``. Any circuit PennyLane can decompose into Pauli
            rotations and Clifford gates: templates, ``Rot``, controlled rotations, ``BasisState`` /
            ``StatePrep`` at the start (see :func:`shadowqng.circuit.circuit_from_tape`).
        *args: the QNode's arguments (``pennylane.numpy`` arrays with ``requires_grad=True`` are trained).
        k: Pauli-weight truncation (``k >= 1``; ``k >= n`` with ``mask=False`` is the exact QFIM).
        shots: number of classical-shadow snapshots, measured on ``qnode.device`` with
            ``qml.classical_shadow``; ``None`` uses exact expectations (``default.qubit`` state).
        mask: apply the support-overlap mask.
        groups, median: median-of-means blocks for the shadow estimate.
        seed: seed for the shadow measurements.
        ledger: a :class:`ShotLedger` charged with the shadow snapshots.
        log: also return a dict of diagnostics (active set, mask, number of strings).
        flat: return the full ``(D, D)`` matrix over the flattened trainable args (``D`` their total
            size, cross-argument blocks included) instead of PennyLane's layout.

    Returns:
        The surrogate in ``qml.metric_tensor``'s layout: ``shape + shape`` for one trainable argument,
        a tuple of per-argument blocks for several. At ``k = n`` with ``mask=False`` and
        ``shots=None`` it is the QFIM, 4 × the Fubini–Study metric (4 × ``qml.adjoint_metric_tensor``).

    Example:
        >>> F = surrogate_qfim(circuit, theta, k=2, shots=2000)  # doctest: +SKIP
    """
    _check_qnode(qnode)
    k = _check_k(k)
    shots = _check_shots(shots)
    groups = _check_groups(groups)
    tape = _tape_of(qnode, args, kwargs)
    arg_jac, argnums = _arg_jacobian(qnode, args, kwargs)
    depends = np.any(np.abs(arg_jac) > 0, axis=1)
    circ = circuit_from_tape(tape, depends=depends)
    theta = circ.values
    terms = propagate_generators(circ, theta, k)
    plan = build_plan(terms, circ.n_params, use_mask=mask)
    ops = tape.operations
    if shots is None:
        st = qml.tape.QuantumScript(ops, [qml.state()])
        (state,) = qml.execute([st], qml.device("default.qubit", wires=tape.wires))
        state = np.asarray(state).reshape(-1)
        f_tape = exact_estimate(plan, state)
    else:
        bits, recipes = measure_shadow(ops, circ.wires, shots, qnode.device, seed)
        f_tape = shadow_estimate(plan, bits, recipes, groups=min(groups, shots), median=median)
        if ledger is not None:
            ledger.record("shadow", circuits=shots, shots=shots)
    jac = arg_jac[depends]  # d θ_circuit / d args
    f = jac.T @ f_tape @ jac
    if not flat:
        f = _pennylane_shapes(f, args, argnums)
    if log:
        active_args = np.any(np.abs(jac[plan.active]) > 0, axis=0)
        return f, {"tape": tape, "active": active_args, "active_tape": plan.active, "mask": plan.mask,
                   "n_strings": plan.n_strings, "n_entries": len(plan.pairs)}
    return f


class ShadowQNGOptimizer(qml.GradientDescentOptimizer):
    r"""Quantum natural gradient with the shadow-estimated, truncated and masked QFIM surrogate.

    .. math:: \theta_A \leftarrow \theta_A - \eta\,(\Pi_{\succeq0}(\hat F_{AA}/4) + \lambda I)^{-1}\nabla_A E,
              \qquad \theta_{\bar A} \leftarrow \theta_{\bar A} - \eta\,\nabla_{\bar A} E,

    with :math:`A` the active set (non-zero truncated generators). ``F/4`` is the Fubini–Study
    scale used by ``qml.QNGOptimizer``, so the two take the same ``stepsize``.

    Args:
        stepsize: learning rate :math:`\eta`.
        k: Pauli-weight truncation.
        shots: classical-shadow snapshots per step (``None``: exact expectations).
        lam: Tikhonov regularisation :math:`\lambda` (on the Fubini–Study scale).
        mask, groups, median: see :func:`surrogate_qfim`.
        seed: an int or ``numpy.random.Generator`` for the shadow measurements.
        ledger: a :class:`ShotLedger`; the gradient's device executions and the snapshots are charged.
        grad_shots: on an analytic device (no ``shots``), the shots per circuit a shot-based gradient
            would spend: the ledger is charged ``grad_shots`` × the circuits of ``qml.gradients.param_shift``
            on the QNode's tape. Without it, the gradient's circuits are counted, its shots are not, and
            the ledger says so (``ledger.complete`` is ``False``). On a device with shots the device's
            executions and shots are counted and ``grad_shots`` must be ``None``.

    Example:
        >>> opt = ShadowQNGOptimizer(stepsize=0.1, k=2, shots=500)  # doctest: +SKIP
        >>> theta, energy = opt.step_and_cost(cost, theta)  # doctest: +SKIP

    Reference: the NeurIPS 2026 paper on locality-aware QFIM surrogates (abstract only; see README).
    """

    def __init__(self, stepsize: float = 0.01, k: int = 2, shots: int | None = 1000, lam: float = 0.01,
                 mask: bool = True, groups: int = 10, median: bool = True, seed=None,
                 ledger: ShotLedger | None = None, grad_shots: int | None = None):
        super().__init__(check_float(stepsize, "stepsize", minimum=0.0, open_minimum=True))
        self.k = _check_k(k)
        self.shots = _check_shots(shots)
        self.grad_shots = _check_shots(grad_shots, "grad_shots")
        self.lam = _check_lam(lam)
        self.mask, self.groups, self.median = bool(mask), _check_groups(groups), bool(median)
        self.rng = np.random.default_rng(seed)
        self.ledger = ledger if ledger is not None else ShotLedger()
        self.metric_tensor = None
        self.active = None

    def step_and_cost(self, qnode, *args, grad_fn=None, **kwargs):
        """One step; returns ``(new_args, cost before the step)`` like ``qml.QNGOptimizer``."""
        _check_qnode(qnode)
        seed = int(self.rng.integers(2 ** 31))
        f, info = surrogate_qfim(qnode, *args, k=self.k, shots=self.shots, mask=self.mask, groups=self.groups,
                                 median=self.median, seed=seed, ledger=self.ledger, log=True, flat=True, **kwargs)
        self.metric_tensor, self.active = f / 4.0, info["active"]
        with qml.Tracker(qnode.device) as tracker:
            g, forward = self.compute_grad(qnode, args, kwargs, grad_fn=grad_fn)
        self._charge_gradient(info["tape"], tracker)
        new_args = self.apply_grad(g, args)
        if forward is None:
            forward = qnode(*args, **kwargs)
        return (new_args[0] if len(new_args) == 1 else new_args), forward

    def _charge_gradient(self, tape, tracker):
        if tape.shots:
            if self.grad_shots is not None:
                raise ValueError("grad_shots applies to analytic devices; this device has shots, which are counted")
            self.ledger.record("gradient", circuits=int(tracker.totals.get("executions", 0)),
                               shots=int(tracker.totals.get("shots", 0)))
            return
        circuits = len(qml.gradients.param_shift(tape)[0])
        if self.grad_shots is None:
            self.ledger.record("gradient", circuits=circuits, shots=0, counted=False)
        else:
            self.ledger.record("gradient", circuits=circuits, shots=circuits * self.grad_shots)

    def step(self, qnode, *args, grad_fn=None, **kwargs):
        """One step; returns the new args (a single array when there is one)."""
        return self.step_and_cost(qnode, *args, grad_fn=grad_fn, **kwargs)[0]

    def apply_grad(self, grad, args):
        trainable = [i for i, a in enumerate(args) if getattr(a, "requires_grad", False)]
        flat = np.concatenate([np.asarray(grad[j], dtype=float).ravel() for j in range(len(trainable))])
        if self.metric_tensor is None or self.metric_tensor.shape != (flat.size, flat.size):
            raise ValueError("params: the metric does not match the gradient; call step/step_and_cost")
        d = natural_direction(flat, self.metric_tensor, self.active, self.lam)
        out, pos = list(args), 0
        for i in trainable:
            a = args[i]
            size = int(np.size(a))
            out[i] = a - self.stepsize * qml.numpy.array(d[pos:pos + size].reshape(np.shape(a)))
            pos += size
        return tuple(out)


def metric_tensor_fn(qnode, *, k: int = 2, shots: int | None = 1000, mask: bool = True, groups: int = 10,
                     median: bool = True, seed=None, ledger: ShotLedger | None = None):
    """The surrogate as a drop-in for ``qml.metric_tensor``: ``fn(*args, **kwargs)`` returns ``F/4``
    (the Fubini–Study scale) in ``qml.metric_tensor``'s layout, for ``qml.QNGOptimizer``'s
    ``metric_tensor_fn=``. Each call draws fresh snapshots (``seed`` seeds the sequence).

    PennyLane's optimizer then applies its own ``lam`` and a pseudo-inverse to the whole matrix (no
    PSD projection, no active set); :class:`ShadowQNGOptimizer` is the method as the paper states it.

    Example:
        >>> opt = qml.QNGOptimizer(stepsize=0.05, lam=0.01)  # doctest: +SKIP
        >>> mt = metric_tensor_fn(cost, k=2, shots=2000, seed=0)  # doctest: +SKIP
        >>> theta = opt.step(cost, theta, metric_tensor_fn=mt)  # doctest: +SKIP
    """
    _check_qnode(qnode)
    k, shots, groups = _check_k(k), _check_shots(shots), _check_groups(groups)
    rng = np.random.default_rng(seed)

    def fn(*args, **kwargs):
        f = surrogate_qfim(qnode, *args, k=k, shots=shots, mask=mask, groups=groups, median=median,
                           seed=int(rng.integers(2 ** 31)), ledger=ledger, **kwargs)
        return tuple(b / 4.0 for b in f) if isinstance(f, tuple) else f / 4.0

    return fn
