"""The benchmark: ratings per second of ``logprob`` against ``sample`` (20 draws) on one tiny model,
their agreement, and endpoint concurrency on the loopback stub. Every timing goes through
:func:`paperworks.bench.compare` (interleaved, one thread, ratio of paired medians with a CI)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from mathinterest.data import PROB_COLUMNS
from mathinterest.generate import templated_problems
from mathinterest.raters import HFRater, OpenAIRater
from mathinterest.stub import StubEndpoint
from mathinterest.tiny import tiny_rater_model
from paperworks import Claim, binomial_ci
from paperworks.bench import compare


def run_bench(cfg, seeds) -> dict:
    b = cfg.bench
    n_samples = int(b.n_samples)
    problems = [{"problem_id": p["problem_id"], "text": p["text"]}
                for p in templated_problems(int(b.n_agree), seed=seeds[0])]
    model, tok = tiny_rater_model([p["text"] for p in problems], seed=seeds[0], width=int(b.width),
                                  layers=int(b.layers))
    batch = problems[: int(b.batch)]
    lp = HFRater(model, tok, mode="logprob", batch_size=len(batch), cache=False)
    sm = HFRater(model, tok, mode="sample", n_samples=n_samples, batch_size=len(batch), cache=False, seed=seeds[0])
    res = compare({"logprob": lambda: lp.rate(batch), f"sample{n_samples}": lambda: sm.rate(batch)},
                  repeats=int(b.repeats), warmup=1, threads=1)
    speed = res.speedup("logprob", over=f"sample{n_samples}")
    rows = [{**r, "ratings_per_s": len(batch) / r["wall_median_s"], "what": "hf"} for r in res.rows()]

    # agreement: the logprob expectation inside the sampled mean's 95% t-interval
    e_lp = HFRater(model, tok, batch_size=int(b.batch)).rate(problems)["expected"].to_numpy()
    smp = HFRater(model, tok, mode="sample", n_samples=n_samples, batch_size=int(b.batch), seed=seeds[0] + 1).rate(problems)
    P = smp[list(PROB_COLUMNS)].to_numpy()
    k = np.arange(1, 8)
    mean = P @ k
    sd = np.sqrt(np.maximum(P @ k ** 2 - mean ** 2, 0) * n_samples / (n_samples - 1))
    half = stats.t.ppf(0.975, n_samples - 1) * sd / np.sqrt(n_samples)
    inside = int(np.sum(np.abs(e_lp - mean) <= half + 1e-12))
    agree = binomial_ci(inside, len(problems))

    # constrained samples converge to the logprob distribution
    few = problems[:4]
    big = HFRater(model, tok, mode="sample", n_samples=int(b.n_converge), batch_size=1, seed=seeds[0] + 2).rate(few)
    conv = float(np.abs(big[list(PROB_COLUMNS)].to_numpy() - lp.rate(few)[list(PROB_COLUMNS)].to_numpy()).max())

    # endpoint concurrency on the loopback stub
    texts = [p["text"] for p in problems[: int(b.stub_problems)]]
    with StubEndpoint(delay=float(b.stub_delay)) as s:
        one = OpenAIRater("stub", base_url=s.url, api_key_env=None, concurrency=1, cache=False)
        many = OpenAIRater("stub", base_url=s.url, api_key_env=None, concurrency=int(b.concurrency), cache=False)
        cres = compare({"concurrency1": lambda: one.rate(texts), f"concurrency{b.concurrency}": lambda: many.rate(texts)},
                       repeats=3, warmup=1, threads=1)
    cspeed = cres.speedup(f"concurrency{b.concurrency}", over="concurrency1")
    rows += [{**r, "ratings_per_s": len(texts) / r["wall_median_s"], "what": "endpoint stub"} for r in cres.rows()]

    claims = [
        Claim.threshold("bench_logprob_10x_faster_than_sample",
                        f"logprob mode rates at least 10x faster than sample mode with {n_samples} samples (same random "
                        f"tiny GPT-2, width {b.width}, {b.layers} layers, same batch of {len(batch)} problems; one forward "
                        f"against {n_samples} prompt encodings; ratio of paired medians, 1 thread).",
                        "time(sample) / time(logprob)", speed, threshold=10.0, better="higher"),
        Claim.threshold("bench_modes_agree",
                        f"The logprob expected rating lies inside the sampled mean's 95% t-interval ({n_samples} samples, "
                        f"T = 1) on at least 90% of {len(problems)} problems (Clopper-Pearson interval).",
                        "fraction of problems inside", agree, threshold=0.9, better="higher"),
    ]
    checks = [
        Claim.check("constrained_samples_converge", f"{b.n_converge} constrained samples at T = 1 reproduce the logprob "
                    "distribution (4 problems).", "max |frequency − p|", conv, threshold=0.05, better="lower"),
        Claim.check("endpoint_concurrency_speedup", f"{b.concurrency} requests in flight rate at least 3x faster than one "
                    f"on the loopback stub ({b.stub_delay}s latency, {len(texts)} problems).",
                    "time(1) / time(n)", float(cspeed.value), threshold=3.0, better="higher"),
    ]
    extra = {"speedup_logprob_over_sample": speed.to_dict(), "speedup_concurrency": cspeed.to_dict(),
             "agreement_inside": inside, "agreement_n": len(problems)}
    return {"claims": claims, "checks": checks, "metrics": rows, "seeds": seeds, "extra": extra}
