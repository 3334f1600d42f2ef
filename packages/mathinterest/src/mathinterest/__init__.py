"""mathinterest — LLM interestingness ratings of math problems, measured against people."""

from mathinterest.data import RATIONALES, load_ratings
from mathinterest.generate import templated_problems, validate_problem
from mathinterest.metrics import (
    distribution_gap,
    krippendorff_alpha,
    population_divergence,
    rating_agreement,
    rationale_alignment,
)
from mathinterest.raters import HFRater, JudgePanel, OpenAIRater
from mathinterest.simulate import SimulatedStudy

__all__ = [
    "HFRater",
    "JudgePanel",
    "OpenAIRater",
    "RATIONALES",
    "SimulatedStudy",
    "distribution_gap",
    "krippendorff_alpha",
    "load_ratings",
    "population_divergence",
    "rating_agreement",
    "rationale_alignment",
    "templated_problems",
    "validate_problem",
]
__version__ = "0.1.0"
