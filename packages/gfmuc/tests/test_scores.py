import itertools

import numpy as np
import pytest
from gfmuc import clustering_scores
from gfmuc.scores import hungarian_accuracy
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score


def brute_force_acc(y, p):
    """Best injective map of clusters to classes, by enumeration."""
    classes, clusters = np.unique(y), np.unique(p)
    best = 0
    slots = list(classes) + [None] * max(0, len(clusters) - len(classes))
    for perm in itertools.permutations(slots, len(clusters)):
        m = dict(zip(clusters, perm))
        best = max(best, sum(m[c] == t for c, t in zip(p, y)))
    return best / len(y)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_one_on_permuted_labels(rng, k):
    y = rng.integers(0, k, 50)
    relabel = rng.permutation(k) * 10 + 7
    s = clustering_scores(y, relabel[y])
    assert s == pytest.approx({"acc": 1.0, "nmi": 1.0, "ari": 1.0})


@pytest.mark.parametrize("kt,kp", [(3, 3), (4, 2), (2, 5), (5, 5), (3, 4)])
def test_acc_matches_brute_force(rng, kt, kp):
    for _ in range(5):
        y, p = rng.integers(0, kt, 30), rng.integers(0, kp, 30)
        assert hungarian_accuracy(y, p) == pytest.approx(brute_force_acc(y, p))


def test_arbitrary_label_values_and_sklearn(rng):
    y = np.array(["a", "b", "b", "c", "a", "c"])
    p = np.array([-5, 2, 2, 2, -5, 9])
    s = clustering_scores(y, p)
    assert s["acc"] == pytest.approx(5 / 6)
    assert s["nmi"] == pytest.approx(normalized_mutual_info_score(y, p))
    assert s["ari"] == pytest.approx(adjusted_rand_score(y, p))


def test_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        clustering_scores([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="y_true is empty"):
        clustering_scores([], [])
    with pytest.raises(ValueError, match="y_pred has NaN"):
        clustering_scores([0, 1], [0.0, np.nan])
