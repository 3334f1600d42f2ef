"""malora — MaLoRA: margin-based, training-free LoRA merging with optimal mixing coefficients.

Theory regime (linear head): :func:`normalized_margins`, :func:`multiclass_svm`,
:func:`closed_form_margins`, :func:`lambda_max`, :func:`train_lora`. Merging: :func:`mixing_coefficients`
(α* maximising the union's min normalised margin), :func:`merge`, and :func:`merge_peft` for a
``peft.PeftModel`` (margins linearised in α, merged adapter written with ``combination_type="cat"``).
"""

from malora.lora import LinearHead, train_head, train_lora
from malora.margins import closed_form_margins, lambda_max, multiclass_svm, normalized_margins
from malora.mixing import merge, mixing_coefficients
from malora.peft_merge import linearized_mixing, merge_peft

__all__ = [
    "LinearHead",
    "closed_form_margins",
    "lambda_max",
    "linearized_mixing",
    "merge",
    "merge_peft",
    "mixing_coefficients",
    "multiclass_svm",
    "normalized_margins",
    "train_head",
    "train_lora",
]
__version__ = "0.1.0"
