import math

import pytest
from factlocus import FactWorld, capacity_load, crossover


def test_capacity_load_formula():
    assert capacity_load(1000, 128, 7000) == pytest.approx(1000 * 7 / 7000)
    with pytest.raises(ValueError):
        capacity_load(10, 1, 100)


def test_only_subject_collision_lowers_the_routing_pathway():
    kw = dict(n_subjects=512, n_relations=8, n_answers=128, seed=0)
    ind = crossover(FactWorld(motif="independent", **kw))
    assert ind["routing_crossover_ratio"] == pytest.approx(1.0)
    for motif in ("relation", "answer"):
        assert crossover(FactWorld(motif=motif, cluster=8, **kw))["routing_crossover_ratio"] == pytest.approx(1.0)
    sub = crossover(FactWorld(motif="subject", cluster=8, **kw))
    S, R, c = 512, 8, 8
    expect = S * R * 7 / ((S / c) * R * 7 + S * math.log2(S / c))
    assert sub["routing_crossover_ratio"] == pytest.approx(expect)
    assert sub["routing_crossover_ratio"] > 1.0
