import jax
import jax.numpy as jnp
import numpy as np
import pytest
from consensusgame import NeighbourAttention, fit_importance, graphs
from consensusgame.attention import attention_received, planted_accuracy


def test_attention_weights_normalise_and_match_numpy():
    g = graphs.real_graph("florentine")
    f = jnp.asarray(graphs.topology_features(g), jnp.float32)
    x = jax.nn.one_hot(jnp.arange(g.n_nodes) % 2, 2)
    layer = NeighbourAttention(8)
    p = layer.init(jax.random.key(0), f, x, g.senders, g.receivers)
    h, alpha, scores = layer.apply(p, f, x, g.senders, g.receivers)
    tot = np.bincount(g.receivers, weights=np.asarray(alpha), minlength=g.n_nodes)
    np.testing.assert_allclose(tot[g.degree() > 0], 1.0, atol=1e-5)
    # independent softmax over each node's neighbours
    s = np.asarray(scores)
    for i in range(g.n_nodes):
        nb = g.senders[g.receivers == i]
        if nb.size:
            w = np.exp(s[nb] - s[nb].max())
            w /= w.sum()
            np.testing.assert_allclose(np.asarray(h)[i], (w[:, None] * np.asarray(x)[nb]).sum(0), atol=1e-5)


def test_fit_recovers_planted_importance_on_star():
    """A hub with a near-perfect signal among unreliable leaves: the hub must get the top score."""
    g = graphs.from_edge_list([[0, i] for i in range(1, 12)] + [[i, i + 1] for i in range(1, 11)], 12)
    q = np.full(12, 0.55)
    q[0] = 0.95
    fit = fit_importance(g, q, key=jax.random.key(0), steps=60, batch=16)
    assert int(np.argmax(fit["scores"])) == 0
    assert fit["loss"][-10:].mean() < fit["loss"][:10].mean()


def test_received_and_planted_shapes(rng):
    g = graphs.barabasi_albert(40, 2)
    q = planted_accuracy(g, rng=rng)
    assert q.shape == (40,) and q.min() >= 0.5 and q.max() <= 0.9
    assert attention_received(g, np.ones(g.senders.shape[0])).shape == (40,)


def test_bad_input():
    g = graphs.real_graph("florentine")
    with pytest.raises(ValueError, match="signal_accuracy"):
        fit_importance(g, np.full(3, 0.6))
    with pytest.raises(ValueError, match="static"):
        fit_importance(graphs.dynamic_groups(10, 5), np.full(10, 0.6))


def test_planted_topology_mix_is_not_degree_rank(rng):
    """With a mixing vector the planted importance follows the features' mix, not degree alone."""
    from paperworks.metrics import spearman

    g = graphs.barabasi_albert(200, 3, seed=0)
    f = graphs.topology_features(g)
    w = np.array([-1.0, 0.0, 1.0, 0.0])              # low degree, high clustering
    q = planted_accuracy(g, rng=rng, noise=0.0, weights=w)
    assert q.min() >= 0.5 and q.max() <= 0.9
    assert spearman(f @ w, q) > 0.99                 # noise-free: the percentile of the mix itself
    assert spearman(g.degree().astype(float), q) < 0
    with pytest.raises(ValueError, match="weights"):
        planted_accuracy(g, rng=rng, weights=np.zeros(4))


def test_independent_importance_is_independent_of_degree():
    """Over many draws the planted importance is uncorrelated with degree (Spearman sd ≈ 0.07 per draw)."""
    from consensusgame.attention import planted_independent

    from paperworks.metrics import spearman

    g = graphs.barabasi_albert(200, 3, seed=0)
    rs = [spearman(g.degree().astype(float), planted_independent(g, rng=np.random.default_rng(s))) for s in range(50)]
    assert abs(np.mean(rs)) < 0.05
    q = planted_independent(g, rng=np.random.default_rng(0))
    assert q.min() == 0.5 and q.max() == 0.9 and len(set(q.tolist())) == 200


def test_identity_features_recover_importance_topology_cannot_see():
    """A complete graph: every node looks the same, so only the declarations can single out the
    reliable node; with node-identity features the fitted layer must give it the top score."""
    from consensusgame.attention import identity_features

    g = graphs.from_networkx(__import__("networkx").complete_graph(8))
    q = np.full(8, 0.55)
    q[5] = 0.95
    fit = fit_importance(g, q, key=jax.random.key(0), steps=80, batch=16, features=identity_features(g))
    assert int(np.argmax(fit["scores"])) == 5
