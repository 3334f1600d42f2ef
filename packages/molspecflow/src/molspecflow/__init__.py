"""molspecflow — MolSpecFlow: a mask-conditioned heterogeneous flow over molecules, fingerprints and MS/MS spectra.

The spectra of the experiments are SIMULATED by :class:`FragmentSimulator` (rule-based, RDKit), not measured.
"""

import warnings

with warnings.catch_warnings():
    # psims (pyteomics reads mzML through it, under matchms) warns on import that the optional hdf5plugin is
    # missing; that only concerns writing mzMLb, which this package never does
    warnings.filterwarnings("ignore", message="hdf5plugin is missing", category=UserWarning)
    import matchms  # noqa: F401

from molspecflow.chem import expected_mass, formula_decoys
from molspecflow.data import load_spectra, make_dataset
from molspecflow.metrics import annotation_metrics
from molspecflow.model import MolSpecFlow
from molspecflow.simulator import FragmentSimulator

__all__ = ["FragmentSimulator", "MolSpecFlow", "annotation_metrics", "expected_mass", "formula_decoys",
           "load_spectra", "make_dataset"]
__version__ = "0.1.0"
