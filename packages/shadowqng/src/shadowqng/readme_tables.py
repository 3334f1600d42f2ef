"""The README's per-arm study tables, generated from ``results/paper.json`` by ``python -m paperworks tables``."""

from __future__ import annotations

import math

import numpy as np


def _lam(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def _shots(est: dict) -> str:
    v = est.get("value")
    return "n/a" if v is None or v == "inf" or (isinstance(v, float) and math.isinf(v)) else f"{float(v):.1e}".replace("e+0", "e")


def study_table(study: dict) -> str:
    """Mean ± std (ddof 1) over the record seeds of the relative error at each budget fraction, per arm."""
    fracs = sorted(study["errors_at"], key=float)
    head = ["arm", "tuned lr", "tuned λ", "settings tried", *[f"{float(f):.0%}" for f in fracs],
            "median shots to target (reached)", "s/step"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for arm, tuned in study["tuned"].items():
        cells = [arm, f"{tuned['lr']:.3g}", _lam(tuned["lam"]), str(len(tuned["table"]))]
        for f in fracs:
            e = np.asarray(study["errors_at"][f][arm], dtype=float)
            cells.append(f"{e.mean():.3f} ± {e.std(ddof=1):.3f}")
        cells += [f"{_shots(study['median_shots_to_target'][arm])} ({study['reached'][arm]})",
                  f"{study['wall_s_per_step'][arm]:.2f}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def build_table(rows: list[dict]) -> str:
    """The surrogate's build cost per (n, k) from the bench record's per-row measurements."""
    build = [r for r in rows if r["kind"] == "build"]
    out = ["| n | k | build (CPU s) | Pauli strings | retained entries | active fraction |", "|---|---|---|---|---|---|"]
    out += [f"| {r['n']} | {r['k']} | {float(r['build_cpu_s']):.3f} | {r['strings']} | {r['entries']} | "
            f"{float(r['active']):.2f} |" for r in build]
    sv = {r["n"]: float(r["statevector_cpu_s"]) for r in build}
    top = max(sv, key=int)
    return "\n".join(out) + (f"\n\nOne statevector simulation of the same circuit, the named reference, takes "
                             f"{sv[top]:.3f} CPU s at n = {top}.")


def readme_tables(records: dict) -> dict[str, str]:
    extra = records["paper"]["extra"]
    out = {}
    if "bench_metrics" in records:
        out["build"] = build_table(records["bench_metrics"])
    for chain, title in (("tfim", "TFIM"), ("xxz", "XXZ")):
        study = extra[f"study_{chain}"]
        out[f"study_{chain}"] = f"{title} n = 8 (target {study['target']:g})\n\n{study_table(study)}"
    return out
