"""IPPO with shared parameters, GAE and general-sum other-play.

Every agent runs the same actor-critic MLP on its own ``(3K + 2)``-dimensional observation
(independent PPO with parameter sharing; the policy does not depend on ``N``). Advantages are
GAE(γ, λ) along the ``R`` rounds of an episode; the loss is the clipped PPO surrogate
(Schulman et al. 2017) plus a value loss and an entropy bonus::

    L = −E[min(ρ Â, clip(ρ, 1 ± ε) Â)] + c_v E[(V − Ĝ)²] / 2 − c_H E[H(π)],   ρ = π/π_old.

**Other-play for general-sum play** (Hu et al. 2020, extended as the paper's abstract describes;
the details are our inference): at the start of every training episode each agent ``i`` draws its
own random permutation ``σ_i`` of the ``K`` option labels. Its observation is relabelled by ``σ_i``
(own signal, own last declaration and the neighbour histogram) and its chosen label ``a`` is sent to
the game as ``σ_i⁻¹(a)``. Arbitrary label conventions ("always say option 0", "say the opposite")
then stop paying, because nobody shares your labelling. A single global ``σ`` for all agents would
change nothing. ``other_play=False`` is plain self-play.

Example:
    >>> env = ConsensusGame(barabasi_albert(20), conformity=0.5)
    >>> params, curve = train_ippo(env, key=jax.random.key(0), num_updates=20)
    >>> evaluate(env, params)["accuracy"]
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from consensusgame.game import ConsensusGame, EnvParams
from consensusgame.policy import Policy


class ActorCritic(nn.Module):
    """Separate two-layer tanh MLPs for the policy logits ``(…, K)`` and the value ``(…)``."""

    n_actions: int
    hidden: int = 64

    @nn.compact
    def __call__(self, obs):
        ortho = nn.initializers.orthogonal
        a = nn.tanh(nn.Dense(self.hidden, kernel_init=ortho(np.sqrt(2)))(obs))
        a = nn.tanh(nn.Dense(self.hidden, kernel_init=ortho(np.sqrt(2)))(a))
        logits = nn.Dense(self.n_actions, kernel_init=ortho(0.01))(a)
        v = nn.tanh(nn.Dense(self.hidden, kernel_init=ortho(np.sqrt(2)))(obs))
        v = nn.tanh(nn.Dense(self.hidden, kernel_init=ortho(np.sqrt(2)))(v))
        v = nn.Dense(1, kernel_init=ortho(1.0))(v)
        return logits, v[..., 0]


@dataclass(frozen=True)
class PPOConfig:
    """PPO hyper-parameters (CleanRL/JaxMARL defaults scaled to a 5-round game)."""

    num_envs: int = 16
    num_updates: int = 150
    lr: float = 3e-3
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    epochs: int = 4
    minibatches: int = 4
    hidden: int = 64
    max_grad_norm: float = 0.5

    def __post_init__(self):
        for name in ("num_envs", "num_updates", "epochs", "minibatches", "hidden"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        for name, lo, hi, lo_open in (("lr", 0.0, np.inf, True), ("gamma", 0.0, 1.0, False),
                                      ("gae_lambda", 0.0, 1.0, False), ("clip", 0.0, np.inf, True),
                                      ("ent_coef", 0.0, np.inf, False), ("vf_coef", 0.0, np.inf, False),
                                      ("max_grad_norm", 0.0, np.inf, True)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ValueError(f"{name} must be a number, got {type(v).__name__} {v!r}")
            ok = np.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
            if not ok:
                raise ValueError(f"{name} must lie in {'(' if lo_open else '['}{lo}, {hi}], got {v!r}")


# other-play permutations ------------------------------------------------------------------

def random_permutations(key, n_agents: int, n_options: int) -> jax.Array:
    """One random permutation per agent, ``(N, K)`` with ``perm[i, k] = σ_i(k)``."""
    return jax.vmap(lambda k: jax.random.permutation(k, n_options))(jax.random.split(key, n_agents)).astype(jnp.int32)


def permute_obs(obs: jax.Array, perm: jax.Array, n_options: int) -> jax.Array:
    """Relabel each agent's observation: label ``k`` becomes ``σ_i(k)`` in its three label blocks."""
    m = jax.nn.one_hot(perm, n_options, dtype=obs.dtype)            # m[i, k, j] = [σ_i(k) = j]
    k = n_options
    blocks = [jnp.einsum("nk,nkj->nj", obs[:, b * k:(b + 1) * k], m) for b in range(3)]
    return jnp.concatenate(blocks + [obs[:, 3 * k:]], axis=-1)


def unpermute_actions(actions: jax.Array, perm: jax.Array) -> jax.Array:
    """An agent's label ``a`` (its own labelling) as the game's label ``σ_i⁻¹(a)``."""
    inv = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(inv, actions[:, None].astype(jnp.int32), 1)[:, 0].astype(jnp.int32)


# training ---------------------------------------------------------------------------------

def make_train(env: ConsensusGame, config: PPOConfig = PPOConfig(), *, with_state: bool = False):
    """A pure ``train(key, env_params, other_play=True, init_params=None) -> (params, mean_return_per_update)``.

    ``other_play`` is traced (a boolean scalar), so ``vmap`` over seeds, conformity values and
    self-play/other-play runs compiles once. Update ``u`` draws its randomness from
    ``fold_in(key_loop, u)``, so training in chunks (checkpoint, resume) gives the same numbers as
    one call. ``with_state=True`` returns ``train(key, env_params, other_play, params, opt_state, start)
    -> (params, opt_state, curve)`` running ``config.num_updates`` updates from update ``start``.
    """
    if not isinstance(env, ConsensusGame):
        raise TypeError(f"env must be a ConsensusGame, got {type(env).__name__}")
    n, k, rounds, cfg = env.num_agents, env.n_options, env.rounds, config
    net = ActorCritic(k, cfg.hidden)
    tx = _optimizer(cfg)
    batch = cfg.num_envs * rounds * n
    if cfg.minibatches > batch:
        raise ValueError(f"minibatches ({cfg.minibatches}) must be <= the batch of num_envs*rounds*N = {batch} samples")
    mb = batch // cfg.minibatches
    identity = jnp.broadcast_to(jnp.arange(k, dtype=jnp.int32), (n, k))

    def episode(params, env_params, other_play, key):
        kr, kp, ks = jax.random.split(key, 3)
        obs, state = env.reset(kr, env_params)
        perm = jnp.where(other_play, random_permutations(kp, n, k), identity)

        def body(carry, kk):
            obs, state = carry
            ka, ke = jax.random.split(kk)
            pobs = permute_obs(obs, perm, k)
            logits, value = net.apply(params, pobs)
            a = jax.random.categorical(ka, logits).astype(jnp.int32)
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), a[:, None], 1)[:, 0]
            obs2, state2, rew, _, _ = env.step(ke, state, unpermute_actions(a, perm), env_params)
            return (obs2, state2), (pobs, a, logp, value, rew)

        _, traj = jax.lax.scan(body, (obs, state), jax.random.split(ks, rounds))
        return traj                                                    # each (R, N, ...)

    def gae(values, rewards):
        adv, last = [], jnp.zeros_like(values[:, 0])
        for t in reversed(range(rounds)):                            # terminal after round R
            nxt = values[:, t + 1] if t + 1 < rounds else jnp.zeros_like(values[:, 0])
            delta = rewards[:, t] + cfg.gamma * nxt - values[:, t]
            last = delta + (cfg.gamma * cfg.gae_lambda * last if t + 1 < rounds else 0.0)
            adv.append(last)
        adv = jnp.stack(adv[::-1], axis=1)
        return adv, adv + values

    def loss_fn(params, b):
        logits, value = net.apply(params, b["obs"])
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, b["act"][:, None], 1)[:, 0]
        adv = (b["adv"] - b["adv"].mean()) / (b["adv"].std() + 1e-8)
        ratio = jnp.exp(logp - b["logp"])
        pg = -jnp.mean(jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv))
        vf = 0.5 * jnp.mean((value - b["ret"]) ** 2)
        ent = -jnp.mean(jnp.sum(jnp.exp(logp_all) * logp_all, -1))
        return pg + cfg.vf_coef * vf - cfg.ent_coef * ent

    def init(key):
        k_init, _ = jax.random.split(key)
        params = net.init(k_init, jnp.zeros((1, env.obs_dim)))
        return params, tx.init(params)

    def run_updates(key, env_params, other_play, params, opt_state, start):
        _, k_loop = jax.random.split(key)

        def update(carry, u):
            params, opt_state = carry
            k_roll, k_sgd = jax.random.split(jax.random.fold_in(k_loop, u))
            obs, act, logp, val, rew = jax.vmap(lambda kk: episode(params, env_params, other_play, kk))(
                jax.random.split(k_roll, cfg.num_envs))                 # (E, R, N, ...)
            adv, ret = gae(val, rew)
            data = {"obs": obs.reshape(batch, -1), "act": act.reshape(batch), "logp": logp.reshape(batch),
                    "adv": adv.reshape(batch), "ret": ret.reshape(batch)}

            def epoch(carry, kk):
                params, opt_state = carry
                idx = jax.random.permutation(kk, batch)[: mb * cfg.minibatches].reshape(cfg.minibatches, mb)

                def minibatch(carry, ids):
                    params, opt_state = carry
                    grads = jax.grad(loss_fn)(params, jax.tree.map(lambda x: x[ids], data))
                    upd, opt_state = tx.update(grads, opt_state, params)
                    return (optax.apply_updates(params, upd), opt_state), None

                return jax.lax.scan(minibatch, (params, opt_state), idx)[0], None

            (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), jax.random.split(k_sgd, cfg.epochs))
            return (params, opt_state), jnp.mean(jnp.sum(rew, axis=1))

        steps = start + jnp.arange(cfg.num_updates)
        (params, opt_state), curve = jax.lax.scan(update, (params, opt_state), steps)
        return params, opt_state, curve

    if with_state:
        return run_updates

    def train(key, env_params: EnvParams, other_play=True, init_params=None):
        params, opt_state = init(key)
        if init_params is not None:
            params, opt_state = init_params, tx.init(init_params)
        params, _, curve = run_updates(key, env_params, other_play, params, opt_state, 0)
        return params, curve

    train.init = init
    return train


_COMPILED: dict = {}


def _compiled(env: ConsensusGame, config: PPOConfig, with_state: bool = False):
    """One jitted training per ``(env.structure, config)``: every game of the same structure shares it,
    since the graph and the conformity arrive as traced :class:`EnvParams` (complete them with
    ``env.complete_params``). A new graph of the same size or a new conformity does not recompile."""
    key = (env.structure, config, with_state)
    fn = _COMPILED.get(key)
    if fn is None:
        if len(_COMPILED) >= 32:
            _COMPILED.pop(next(iter(_COMPILED)))
        fn = _COMPILED[key] = jax.jit(make_train(env, config, with_state=with_state))
    return fn


def _jitted_train(env: ConsensusGame, config: PPOConfig):
    return _compiled(env, config)


def _jitted_chunk(env: ConsensusGame, config: PPOConfig):
    return _compiled(env, config, with_state=True)


def _check_finite(tree, what: str) -> None:
    for leaf in jax.tree.leaves(tree):
        a = np.asarray(leaf)
        if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
            raise FloatingPointError(f"{what} hold non-finite values (NaN or inf)")


def train_ippo(env: ConsensusGame, *, key=None, other_play: bool = True, params: EnvParams | None = None,
               init_params=None, checkpoint=None, checkpoint_every: int | None = None, resume: bool = False,
               **ppo) -> tuple[dict, np.ndarray]:
    """Train one shared policy with IPPO; returns ``(network params, mean return per update)``.

    Args:
        env: the game.
        key: a JAX PRNG key (default ``jax.random.key(0)``).
        other_play: per-agent label permutations during training (default) or self-play.
        params: game parameters (default ``env.default_params``; graph fields left ``None`` are the
            game's own). Training compiles once per :attr:`ConsensusGame.structure` and PPO
            configuration: another graph of the same size (``env.make_params(graph=...)``) or
            conformity reuses the compiled code.
        init_params: start from these network parameters (fine-tune; fresh optimiser state).
        checkpoint: a file; with ``checkpoint_every`` the network *and optimiser* state, the update
            count and the curve are written there every ``checkpoint_every`` updates.
        resume: continue from ``checkpoint`` if it exists (bit-identical to an uninterrupted run:
            update ``u`` draws from ``fold_in(key, u)``); its configuration must match.
        **ppo: fields of :class:`PPOConfig` (``num_updates``, ``num_envs``, ``lr``, ...).

    Raises:
        FloatingPointError: training produced non-finite parameters or returns.
    """
    if not isinstance(env, ConsensusGame):
        raise TypeError(f"env must be a ConsensusGame, got {type(env).__name__}")
    config = PPOConfig(**ppo)
    key = jax.random.key(0) if key is None else key
    params = env.complete_params(params)           # the graph travels as traced parameters
    if checkpoint_every is None and not resume:
        if checkpoint is not None:
            raise ValueError("checkpoint needs checkpoint_every (or resume=True)")
        make_train(env, config)                                          # validates minibatches <= batch
        out, curve = _jitted_train(env, config)(key, params, jnp.bool_(other_play), init_params)
        curve = np.asarray(curve)
        _check_finite((out, curve), "the trained parameters or returns")
        return out, curve
    if checkpoint is None:
        raise ValueError("checkpoint_every / resume need a checkpoint path")
    every = config.num_updates if checkpoint_every is None else int(checkpoint_every)
    if every < 1:
        raise ValueError(f"checkpoint_every must be >= 1, got {checkpoint_every}")
    net_params, opt_state = make_train(env, config).init(key)
    if init_params is not None:
        net_params = init_params
        opt_state = _optimizer(config).init(init_params)
    meta = {"config": {k: v for k, v in asdict(config).items() if k != "num_updates"}, "other_play": bool(other_play),
            "key": np.asarray(jax.random.key_data(key)).tolist(),
            "conformity": float(params.conformity), "n_agents": env.num_agents}
    start, curve = 0, []
    path = Path(checkpoint)
    if resume and path.exists():
        state, saved = load_checkpoint(path, net_params, opt_state)
        for k in meta:
            if saved.get(k) != meta[k]:
                raise ValueError(f"checkpoint {path} was written with another {k}: {saved.get(k)!r} != {meta[k]!r}")
        net_params, opt_state = state["params"], state["opt_state"]
        start, curve = int(saved["update"]), list(saved["curve"])
    while start < config.num_updates:
        n = min(every, config.num_updates - start)
        chunk = _jitted_chunk(env, PPOConfig(**{**asdict(config), "num_updates": n}))
        net_params, opt_state, c = chunk(key, params, jnp.bool_(other_play), net_params, opt_state, jnp.int32(start))
        c = np.asarray(c)
        _check_finite((net_params, c), f"the parameters or returns after update {start + n}")
        start, curve = start + n, curve + c.tolist()
        save_params(path, serialization.to_state_dict({"params": net_params, "opt_state": opt_state}),
                    meta={**meta, "update": start, "curve": curve})
    return net_params, np.asarray(curve, dtype=np.float32)


def _optimizer(cfg: PPOConfig):
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.lr, eps=1e-5))


def load_checkpoint(path, params_template, opt_state_template) -> tuple[dict, dict]:
    """Read a training checkpoint of :func:`train_ippo`: ``({"params", "opt_state"}, meta)``."""
    raw, meta = load_params(path)
    if not isinstance(raw, dict) or set(raw) != {"params", "opt_state"}:
        raise ValueError(f"{path} is not a consensusgame training checkpoint (no optimiser state)")
    state = serialization.from_state_dict({"params": params_template, "opt_state": opt_state_template}, raw)
    return jax.tree.map(jnp.asarray, state), meta


# acting -----------------------------------------------------------------------------------

def _hidden(params) -> int:
    return int(params["params"]["Dense_0"]["kernel"].shape[1])


@lru_cache(maxsize=64)
def _policy_fns(n_options: int, hidden: int, greedy: bool):
    net = ActorCritic(n_options, hidden)

    def init(args, key, obs, state):
        return ()

    def act(args, key, obs, state, carry):
        logits, _ = net.apply(args, obs)
        a = jnp.argmax(logits, -1) if greedy else jax.random.categorical(key, logits)
        return a.astype(jnp.int32), carry

    return init, act


def make_policy(params, env: ConsensusGame, *, greedy: bool = False) -> Policy:
    """The learned policy as a :class:`~consensusgame.policy.Policy` (sampled, or ``greedy``).

    Raises ``FloatingPointError`` for parameters holding NaN or inf (they would give plausible metrics)."""
    if not isinstance(params, jax.core.Tracer) and not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(params)):
        _check_finite(params, "the policy parameters")
    init, act = _policy_fns(env.n_options, _hidden(params), bool(greedy))
    return Policy(init, act, params, "ippo")


@lru_cache(maxsize=64)
def _mixed_fns(n_options: int, hidden: int, n_agents: int):
    net = ActorCritic(n_options, hidden)

    def init(args, key, obs, state):
        pa, pb, frac = args
        return jax.random.uniform(key, (n_agents,)) < frac            # True: population A

    def act(args, key, obs, state, from_a):
        pa, pb, _ = args
        la, _ = net.apply(pa, obs)
        lb, _ = net.apply(pb, obs)
        return jax.random.categorical(key, jnp.where(from_a[:, None], la, lb)).astype(jnp.int32), from_a

    return init, act


def mixed_policy(params_a, params_b, env: ConsensusGame, frac_a: float = 0.5) -> Policy:
    """Cross-play: each agent is drawn from population A (prob. ``frac_a``) or B for the episode."""
    _check_finite((params_a, params_b), "the policy parameters")
    init, act = _mixed_fns(env.n_options, _hidden(params_a), env.num_agents)
    return Policy(init, act, (params_a, params_b, jnp.float32(frac_a)), "cross-play")


def action_probs(params, obs) -> jax.Array:
    """Policy probabilities ``(…, K)`` of the network for observations ``(…, 3K + 2)``."""
    k = int(params["params"]["Dense_2"]["kernel"].shape[1])
    logits, _ = ActorCritic(k, _hidden(params)).apply(params, obs)
    return jax.nn.softmax(logits)


def relabel_params(params, perm) -> dict:
    """The network of the population that uses the *global* relabelling ``σ`` (``perm[k] = σ(k)``)
    as its convention: ``π'(a | o) = π(σ(a) | σ·o)`` and ``V'(o) = V(σ·o)``, exactly, by permuting
    the input rows of the label blocks and the logit columns. A self-play population and its
    relabelled copy share no convention; an equivariant policy is its own relabelled copy."""
    perm = np.asarray(perm)
    k = int(params["params"]["Dense_2"]["kernel"].shape[1])
    if sorted(perm.tolist()) != list(range(k)):
        raise ValueError(f"perm must be a permutation of range({k}), got {perm.tolist()}")
    obs_dim = int(params["params"]["Dense_0"]["kernel"].shape[0])
    rows = np.arange(obs_dim)
    for b in range(3):
        rows[b * k:(b + 1) * k] = b * k + perm
    p = {name: dict(layer) for name, layer in params["params"].items()}
    for name in ("Dense_0", "Dense_3"):                               # the actor's and the critic's input layers
        p[name]["kernel"] = jnp.asarray(params["params"][name]["kernel"])[rows]
    p["Dense_2"]["kernel"] = jnp.asarray(params["params"]["Dense_2"]["kernel"])[:, perm]
    p["Dense_2"]["bias"] = jnp.asarray(params["params"]["Dense_2"]["bias"])[perm]
    return {"params": p}


def symmetrized_probs(params, obs) -> jax.Array:
    """``π̄(a|o) = mean_σ π(σ(a) | σ·o)`` over all ``K!`` relabellings: the other-play marginal,
    exactly equivariant, ``π̄(σ(a) | σ·o) = π̄(a | o)``."""
    k = int(params["params"]["Dense_2"]["kernel"].shape[1])
    out = 0.0
    perms = list(itertools.permutations(range(k)))
    for p in perms:
        perm = jnp.broadcast_to(jnp.asarray(p, jnp.int32), (obs.shape[0], k))
        probs = action_probs(params, permute_obs(obs, perm, k))
        out = out + jnp.take_along_axis(probs, perm, 1)              # p_σ(σ(a)) for every a
    return out / len(perms)


def equivariance_error(params, obs, key, *, symmetrize: bool = False) -> float:
    """Mean total-variation distance between ``π(σ_i(·) | σ_i·o_i)`` and ``π(· | o_i)`` over random per-agent ``σ_i``."""
    return float(_equivariance_error(params, obs, key, bool(symmetrize)))


@partial(jax.jit, static_argnums=(3,))
def _equivariance_error(params, obs, key, symmetrize):
    k = int(params["params"]["Dense_2"]["kernel"].shape[1])
    probs = symmetrized_probs if symmetrize else action_probs
    perm = random_permutations(key, obs.shape[0], k)
    p = probs(params, obs)
    q = jnp.take_along_axis(probs(params, permute_obs(obs, perm, k)), perm, 1)
    return 0.5 * jnp.mean(jnp.sum(jnp.abs(p - q), -1))


# checkpoints ------------------------------------------------------------------------------

def save_params(path, params, *, meta: dict | None = None) -> Path:
    """Write parameters (msgpack via ``flax.serialization``; no pickle) atomically."""
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = serialization.msgpack_serialize({"params": jax.device_get(params), "meta": dict(meta or {})})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, path)
    return path


def load_params(path) -> tuple[dict, dict]:
    """Read ``(params, meta)`` written by :func:`save_params`."""
    doc = serialization.msgpack_restore(Path(path).read_bytes())
    if not isinstance(doc, dict) or "params" not in doc:
        raise ValueError(f"{path} is not a consensusgame checkpoint")
    return jax.tree.map(jnp.asarray, doc["params"]), dict(doc.get("meta", {}))


def config_dict(config: PPOConfig) -> dict:
    return asdict(config)
