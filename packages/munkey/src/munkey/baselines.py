"""Post-hoc unlearning baselines on the plain ViT, and the data each one needs.

Each method takes the trained original model (it is copied, never changed), the forget and retain
sets as ``(images, labels)`` and a learning rate (SSD: its selection threshold α), and returns the
unlearned copy. Own implementations following the papers:

* ``finetune``      — FT: cross-entropy on the retain set only (Warnecke et al., 2023 style).
* ``neggrad_plus``  — NegGrad+: β·CE(retain) − (1−β)·CE(forget), β = 0.95 (Kurmanji et al., 2023).
* ``random_labels`` — RL: CE on the forget set with random wrong labels plus CE on retain (Golatkar 2020 / SalUn).
* ``scrub``         — SCRUB: a student from the original, the original as teacher; max-steps raise
                      KL(teacher‖student) on the forget set (first epoch), min-steps lower KL + CE on retain.
* ``salun``         — SalUn: RL updates restricted to the 50 % of weights with the largest forget-loss
                      gradient (Fan et al., 2024).
* ``ssd``           — SSD: Selective Synaptic Dampening (Foster et al., 2024): weights whose forget
                      Fisher importance exceeds α × their training-set importance are scaled by
                      min(λ·I_D/I_f, 1), λ = 1; no gradient steps.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

# what each method reads besides the model (recorded in the results)
DATA_ACCESS = {
    "munkey_delete": "forget ids only (no images, no labels, no retain data)",
    "oracle": "retain images and labels (full retraining)",
    "finetune": "retain images and labels",
    "neggrad_plus": "forget and retain images and labels",
    "random_labels": "forget images, retain images and labels",
    "scrub": "forget and retain images, retain labels, the original model as teacher",
    "salun": "forget images and labels (saliency), retain images and labels",
    "ssd": "forget and full training images and labels (Fisher importances)",
}
BASELINES = ("finetune", "neggrad_plus", "random_labels", "scrub", "salun", "ssd")


def _batches(x, y, bs, g):
    perm = torch.randperm(len(x), generator=g)
    for i in range(0, len(x), bs):
        b = perm[i:i + bs]
        yield x[b], y[b]


def _cycle(x, y, bs, g):
    while True:
        yield from _batches(x, y, bs, g)


def _wrong_labels(y, k, g):
    return (y + torch.randint(1, k, y.shape, generator=g).to(y.device)) % k


def _opt(model, lr):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def finetune(model, forget, retain, *, lr, epochs=2, bs=64, seed=0):
    m, g = copy.deepcopy(model).train(), torch.Generator().manual_seed(seed)
    opt = _opt(m, lr)
    for _ in range(epochs):
        for x, y in _batches(*retain, bs, g):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
    return m.eval()


def neggrad_plus(model, forget, retain, *, lr, epochs=2, bs=64, seed=0, beta=0.95):
    m, g = copy.deepcopy(model).train(), torch.Generator().manual_seed(seed)
    opt = _opt(m, lr)
    fb = _cycle(*forget, bs, g)
    for _ in range(epochs):
        for x, y in _batches(*retain, bs, g):
            xf, yf = next(fb)
            loss = beta * F.cross_entropy(m(x), y) - (1 - beta) * F.cross_entropy(m(xf), yf)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return m.eval()


def _rl_steps(m, forget, retain, lr, epochs, bs, g, mask=None):
    opt = _opt(m, lr)
    k = m.num_classes
    fb = _cycle(*forget, bs, g)
    for _ in range(epochs):
        for x, y in _batches(*retain, bs, g):
            xf, yf = next(fb)
            loss = F.cross_entropy(m(x), y) + F.cross_entropy(m(xf), _wrong_labels(yf, k, g))
            opt.zero_grad()
            loss.backward()
            if mask is not None:
                for p, mk in zip(m.parameters(), mask, strict=True):
                    if p.grad is not None:
                        p.grad.mul_(mk)
            opt.step()
    return m.eval()


def random_labels(model, forget, retain, *, lr, epochs=2, bs=64, seed=0):
    m, g = copy.deepcopy(model).train(), torch.Generator().manual_seed(seed)
    return _rl_steps(m, forget, retain, lr, epochs, bs, g)


def salun(model, forget, retain, *, lr, epochs=2, bs=64, seed=0, sparsity=0.5):
    m, g = copy.deepcopy(model).train(), torch.Generator().manual_seed(seed)
    m.zero_grad()
    F.cross_entropy(m(forget[0]), forget[1]).backward()
    grads = [p.grad.abs() if p.grad is not None else torch.zeros_like(p) for p in m.parameters()]
    thr = torch.quantile(torch.cat([gr.flatten() for gr in grads])[:2 ** 24], sparsity)
    mask = [(gr >= thr).to(gr.dtype) for gr in grads]
    m.zero_grad()
    return _rl_steps(m, forget, retain, lr, epochs, bs, g, mask)


def scrub(model, forget, retain, *, lr, epochs=2, bs=64, seed=0, max_epochs=1, alpha=1.0):
    teacher = copy.deepcopy(model).eval()
    m, g = copy.deepcopy(model).train(), torch.Generator().manual_seed(seed)
    opt = _opt(m, lr)

    def kl(xb):
        with torch.no_grad():
            t = F.log_softmax(teacher(xb), -1)
        return F.kl_div(F.log_softmax(m(xb), -1), t, log_target=True, reduction="batchmean")

    for ep in range(epochs):
        if ep < max_epochs:
            for xf, _ in _batches(*forget, bs, g):
                opt.zero_grad()
                (-kl(xf)).backward()
                opt.step()
        for x, y in _batches(*retain, bs, g):
            opt.zero_grad()
            (alpha * kl(x) + F.cross_entropy(m(x), y)).backward()
            opt.step()
    return m.eval()


def _fisher(m, x, y, bs):
    imp = [torch.zeros_like(p) for p in m.parameters()]
    for i in range(0, len(x), bs):
        m.zero_grad()
        F.cross_entropy(m(x[i:i + bs]), y[i:i + bs]).backward()
        for a, p in zip(imp, m.parameters(), strict=True):
            if p.grad is not None:
                a += p.grad.detach() ** 2
    m.zero_grad()
    return [a / max(1, -(-len(x) // bs)) for a in imp]


@torch.no_grad()
def _dampen(m, i_d, i_f, alpha, lam):
    for p, d, f in zip(m.parameters(), i_d, i_f, strict=True):
        sel = f > alpha * d
        p[sel] *= torch.clamp(lam * d[sel] / f[sel].clamp_min(1e-30), max=1.0)


def ssd(model, forget, retain, *, lr, epochs=0, bs=64, seed=0, lam=1.0):
    """``lr`` is read as SSD's selection threshold α (the one knob on its grid)."""
    m = copy.deepcopy(model).eval()
    train = (torch.cat([retain[0], forget[0]]), torch.cat([retain[1], forget[1]]))
    with torch.enable_grad():
        i_d, i_f = _fisher(m, *train, bs), _fisher(m, *forget, bs)
    _dampen(m, i_d, i_f, float(lr), lam)
    return m


METHODS = {"finetune": finetune, "neggrad_plus": neggrad_plus, "random_labels": random_labels, "scrub": scrub,
           "salun": salun, "ssd": ssd}


def grid_for(name: str, lrs, ssd_alphas):
    return list(ssd_alphas) if name == "ssd" else list(lrs)


__all__ = ["BASELINES", "DATA_ACCESS", "METHODS", "finetune", "grid_for", "neggrad_plus", "random_labels",
           "salun", "scrub", "ssd"]
