"""ModelLens: a performance-aware latent space over (model, dataset, metric) tuples.

Cai et al., "ModelLens: model recommendation in the wild from public leaderboard records"
(arXiv 2605.07075). Built from the abstract and the brief; the official code is reference reading
only and was not copied. Details inferred rather than read from the paper: the sum of the views
(rather than concatenation), the size buckets (training-model quartiles of log size), equal loss
weights, the MLP width and fixed full-batch training length.

Views (each may be switched off for ablations with ``views=``):

- model: a learned ID embedding (IDs dropped to [UNK] with probability ``id_dropout`` while
  training, so [UNK] learns what an unseen model looks like) + a linear encoder of character
  2–4-gram TF-IDF of the model name + family and size-bucket prior embeddings;
- dataset: a learned ID embedding with the same dropout + a linear map of a frozen description
  embedding (TF-IDF + truncated SVD, or any text encoder you pass) + a task embedding;
- metric: an embedding per metric name.

The scorer is an MLP on ``[u, v, w, u ⊙ v]`` giving s(m, d, μ), trained on per-(dataset, metric)
z-scores of oriented records with the loss ensemble

    L = L_PL + L_BPR + L_MSE,
    L_PL  = −Σ_i [s_πi/τ − log Σ_{j≥i} exp(s_πj/τ)]        (listwise Plackett–Luce, logcumsumexp)
    L_BPR = mean_{z_i > z_j} softplus(−(s_i − s_j)/τ)      (pairwise)
    L_MSE = mean (s − z)²                                  (pointwise)

with a learnable temperature τ. Groups are (dataset, metric) lists.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator
from torch import nn

from modellens.records import check_name_leakage, higher_is_better, normalise, validate_records
from paperworks import atomic_torch_save, check_float, check_int

log = logging.getLogger("modellens")

LOSSES = ("listwise", "pairwise", "pointwise")
VIEWS = ("model_id", "name", "priors", "dataset_id", "description", "metric")
N_SIZE_BUCKETS = 4


# losses -------------------------------------------------------------------------------------------

def listwise_loss(scores: torch.Tensor, z: torch.Tensor, mask: torch.Tensor, tau) -> torch.Tensor:
    """Plackett–Luce NLL of the true order per row, mean over rows with ≥ 2 items.

    Args:
        scores, z, mask: ``(G, L)``; padded entries have ``mask = False``.
    """
    neg = torch.finfo(scores.dtype).min / 4
    order = torch.argsort(torch.where(mask, z, torch.full_like(z, -torch.inf)), dim=1, descending=True)
    s = torch.gather(scores / tau, 1, order)
    m = torch.gather(mask, 1, order)
    s_masked = torch.where(m, s, torch.full_like(s, neg))
    tail = torch.logcumsumexp(s_masked.flip(1), dim=1).flip(1)
    per = torch.where(m, tail - s, torch.zeros_like(s)).sum(1)
    ok = mask.sum(1) >= 2
    return per[ok].mean() if ok.any() else scores.sum() * 0


def pairwise_loss(scores, z, mask, tau, eps: float = 1e-6) -> torch.Tensor:
    """BPR: mean over ordered pairs (z_i > z_j, same row) of softplus(−(s_i − s_j)/τ)."""
    better = (z[:, :, None] > z[:, None, :] + eps) & mask[:, :, None] & mask[:, None, :]
    if not better.any():
        return scores.sum() * 0
    diff = (scores[:, :, None] - scores[:, None, :]) / tau
    return nn.functional.softplus(-diff[better]).mean()


def pointwise_loss(scores, z, mask) -> torch.Tensor:
    return ((scores - z) ** 2)[mask].mean()


# network ------------------------------------------------------------------------------------------

class LensNet(nn.Module):
    """The three-view scorer; inputs are index/feature tensors built by :class:`ModelLens`."""

    def __init__(self, *, n_models, n_datasets, n_families, n_metrics, n_tasks, name_dim, text_dim, dim, views):
        super().__init__()
        self.views = tuple(views)
        self.model_id = nn.Embedding(n_models + 1, dim)   # row 0 = [UNK]
        self.name = nn.Linear(name_dim, dim, bias=False)
        self.family = nn.Embedding(n_families + 1, dim)
        self.size = nn.Embedding(N_SIZE_BUCKETS + 1, dim)
        self.dataset_id = nn.Embedding(n_datasets + 1, dim)
        self.description = nn.Linear(text_dim, dim, bias=False)
        self.task = nn.Embedding(n_tasks + 1, dim)
        self.metric = nn.Embedding(n_metrics + 1, dim)
        self.scorer = nn.Sequential(nn.Linear(4 * dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim), nn.GELU(),
                                    nn.Linear(dim, 1))
        # additive priors: a family bias and a size-bucket bias per metric (the mean-rank prior a
        # recommender must at least match), the MLP then models the dataset-specific part
        self.family_bias = nn.Embedding((n_families + 1) * (n_metrics + 1), 1)
        self.size_bias = nn.Embedding((N_SIZE_BUCKETS + 1) * (n_metrics + 1), 1)
        self.n_metrics = n_metrics
        self.log_tau = nn.Parameter(torch.zeros(()))
        self.reset_parameters()

    def reset_parameters(self):
        for emb in (self.model_id, self.family, self.size, self.dataset_id, self.task, self.metric):
            nn.init.normal_(emb.weight, std=0.1)
        nn.init.zeros_(self.family_bias.weight)
        nn.init.zeros_(self.size_bias.weight)

    def model_vec(self, mid, name_x, fam, size):
        u = torch.zeros(mid.shape[0], self.model_id.embedding_dim, device=mid.device)
        if "model_id" in self.views:
            u = u + self.model_id(mid)
        if "name" in self.views:
            u = u + self.name(name_x)
        if "priors" in self.views:
            u = u + self.family(fam) + self.size(size)
        return u

    def dataset_vec(self, did, text_x, task):
        v = self.task(task)
        if "dataset_id" in self.views:
            v = v + self.dataset_id(did)
        if "description" in self.views:
            v = v + self.description(text_x)
        return v

    def forward(self, u, v, metric, fam=None, size=None):
        w = self.metric(metric) if "metric" in self.views else torch.zeros_like(u)
        out = self.scorer(torch.cat([u, v, w, u * v], dim=1)).squeeze(1)
        if "priors" in self.views and fam is not None:
            me = metric if "metric" in self.views else torch.zeros_like(metric)
            k = self.n_metrics + 1
            out = out + self.family_bias(fam * k + me).squeeze(1) + self.size_bias(size * k + me).squeeze(1)
        return out


# the estimator ------------------------------------------------------------------------------------

def _family_of(name: str) -> str:
    return name.split("-", 1)[0].lower()


class ModelLens(BaseEstimator):
    """Rank models for a dataset from leaderboard records, including unseen models and datasets.

    Args:
        dim: width of every view embedding.
        losses: any non-empty subset of ``("listwise", "pairwise", "pointwise")``.
        id_dropout: probability of replacing a training ID by [UNK] (cold-start training).
        text_encoder: ``"tfidf"`` (TF-IDF + SVD, offline), a callable mapping a list of strings
            to an ``(n, k)`` array, or the path of a local sentence-transformers model (needs
            ``sentence-transformers``, not a dependency of this package).
        epochs, lr, weight_decay: full-batch Adam training; ``epochs`` is the maximum.
        early_stopping: choose the number of epochs (a multiple of 25) by τ_w on an inner split of
            the training records that holds out 15% of models and datasets, then train on all.
        views: the views used (ablations drop some; see :data:`VIEWS`).
        text_dim: SVD dimension of the description embedding.
        name_dropout: probability of zeroing a training record's name features, so that the
            name encoder cannot act as a second, never-dropped ID (an inferred detail).
        metric_directions: extra ``{metric: higher_is_better}`` for metrics not in the table.
        device: ``"cpu"``, ``"cuda"`` or ``"auto"``.
        random_state: seed of initialisation and dropout.

    Example::

        from modellens import ModelLens, load_mini_leaderboard
        from modellens.data import dataset_meta, model_meta

        lens = ModelLens(random_state=0).fit(load_mini_leaderboard(), model_meta(), dataset_meta())
        lens.rank("iris", ["rf-n200-d8", "knn-k5", "prior-mean"], "accuracy")   # best first
        lens.top_k_pool("wine", k=5)                                            # a router's pool
    """

    def __init__(self, dim=64, losses=LOSSES, id_dropout=0.3, text_encoder="tfidf", random_state=None, *,
                 epochs=300, lr=3e-3, weight_decay=1e-4, views=VIEWS, text_dim=32, name_dropout=0.5,
                 early_stopping=True, metric_directions=None, device="cpu"):
        check_int(dim, "dim", minimum=1)
        if isinstance(losses, str) or not losses or not set(losses) <= set(LOSSES):
            raise ValueError(f"losses must be a non-empty subset of {LOSSES}, got {losses!r}")
        check_float(id_dropout, "id_dropout", minimum=0, maximum=1, open_maximum=True)
        if not (text_encoder == "tfidf" or callable(text_encoder) or isinstance(text_encoder, (str, Path))):
            raise TypeError(f"text_encoder must be 'tfidf', a callable or a model path, got {text_encoder!r}")
        check_int(epochs, "epochs", minimum=1)
        check_float(lr, "lr", minimum=0, open_minimum=True)
        check_float(weight_decay, "weight_decay", minimum=0)
        if isinstance(views, str) or not set(views) <= set(VIEWS):
            raise ValueError(f"views must be a subset of {VIEWS}, got {views!r}")
        check_int(text_dim, "text_dim", minimum=1)
        check_float(name_dropout, "name_dropout", minimum=0, maximum=1)
        if not isinstance(device, str) or device.split(":")[0].strip().lower() not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {device!r}")
        if random_state is not None:
            check_int(random_state, "random_state", minimum=0)
        self.dim, self.losses, self.id_dropout, self.text_encoder = dim, losses, id_dropout, text_encoder
        self.random_state, self.epochs, self.lr, self.weight_decay = random_state, epochs, lr, weight_decay
        self.views, self.text_dim, self.metric_directions, self.device = views, text_dim, metric_directions, device
        self.name_dropout, self.early_stopping = name_dropout, bool(early_stopping)

    # encoders -------------------------------------------------------------------------------------

    def _fit_encoders(self, models, texts):
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.name_vec_ = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), max_features=512,
                                         lowercase=True).fit(models)
        if self.text_encoder == "tfidf":
            self.text_vec_ = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"[A-Za-z0-9.]+")
            X = self.text_vec_.fit_transform(texts)
            k = max(1, min(self.text_dim, X.shape[0] - 1, X.shape[1] - 1))
            self.svd_components_ = TruncatedSVD(k, random_state=0).fit(X).components_
        else:
            self.text_vec_ = None
            self._external = self._external_encoder()

    def _external_encoder(self):
        if callable(self.text_encoder):
            return self.text_encoder
        try:
            import importlib

            st = importlib.import_module("sentence_transformers")
        except ImportError as e:
            raise ImportError("text_encoder as a model path needs sentence-transformers "
                              "(pip install sentence-transformers); or pass a callable") from e
        model = st.SentenceTransformer(str(self.text_encoder))
        return lambda texts: model.encode(list(texts))

    def _encode_names(self, names) -> np.ndarray:
        return self.name_vec_.transform(list(names)).toarray().astype(np.float32)

    def _encode_texts(self, texts) -> np.ndarray:
        if self.text_vec_ is not None:
            X = self.text_vec_.transform(list(texts)) @ self.svd_components_.T
        else:
            X = np.asarray(self._external(list(texts)), dtype=float)
        X = np.asarray(X, dtype=np.float32)
        return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-8)

    # entity tables --------------------------------------------------------------------------------

    def _register(self, model_meta, dataset_meta, records=None):
        """Fill the per-entity tables (train entities and the ones described by meta)."""
        mm = _meta_frame(model_meta, "model_meta", "model")
        dm = _meta_frame(dataset_meta, "dataset_meta", "dataset")
        models = dict.fromkeys(self.models_)
        datasets = dict.fromkeys(self.datasets_)
        models.update(dict.fromkeys(mm["model"].astype(str)))
        datasets.update(dict.fromkeys(dm["dataset"].astype(str)))
        fam = {m: _family_of(m) for m in models}
        size = {m: np.nan for m in models}
        if "family" in mm:
            fam.update({str(m): str(f).lower() for m, f in zip(mm["model"], mm["family"]) if pd.notna(f)})
        if "size" in mm:
            for m, s in zip(mm["model"], mm["size"]):
                if pd.notna(s):
                    s = check_float(float(s), f"size of model {m!r}", minimum=0, open_minimum=True)
                    size[str(m)] = s
        task = dict(self.task_of_)
        desc = {d: d for d in datasets}
        if "task" in dm:
            task.update({str(d): str(t) for d, t in zip(dm["dataset"], dm["task"]) if pd.notna(t)})
        if "description" in dm:
            desc.update({str(d): str(t) for d, t in zip(dm["dataset"], dm["description"]) if pd.notna(t)})
        for d in datasets:
            if d not in task:
                raise ValueError(f"dataset {d!r} has no task: give it in dataset_meta['task']")
        return list(models), fam, size, list(datasets), task, desc

    def _tables(self, models, fam, size, datasets, task, desc):
        self.known_models_ = list(models)
        self.known_datasets_ = list(datasets)
        mid = {m: i + 1 for i, m in enumerate(self.models_)}
        self.m_index_ = {m: i for i, m in enumerate(models)}
        self.d_index_ = {d: i for i, d in enumerate(datasets)}
        self.m_id_ = torch.tensor([mid.get(m, 0) for m in models])
        self.m_name_ = torch.tensor(self._encode_names(models))
        self.m_fam_ = torch.tensor([self.family_index_.get(fam[m], 0) for m in models])
        self.m_size_ = torch.tensor([self._bucket(size[m]) for m in models])
        did = {d: i + 1 for i, d in enumerate(self.datasets_)}
        self.d_id_ = torch.tensor([did.get(d, 0) for d in datasets])
        self.d_text_ = torch.tensor(self._encode_texts([desc[d] for d in datasets]))
        self.d_task_ = torch.tensor([self.task_index_.get(task[d], 0) for d in datasets])
        self.task_of_ = {d: task[d] for d in datasets}
        self.family_of_ = {m: fam[m] for m in models}
        self.size_of_ = {m: size[m] for m in models}
        self.description_of_ = {d: desc[d] for d in datasets}

    def _bucket(self, s) -> int:
        if s is None or not np.isfinite(s):
            return 0
        return 1 + int(np.searchsorted(self.size_edges_, np.log10(s)))

    # fit -----------------------------------------------------------------------------------------

    def fit(self, records, model_meta=None, dataset_meta=None):
        """Learn from records; ``model_meta``/``dataset_meta`` describe entities (seen or unseen).

        Args:
            records: DataFrame ``model, dataset, task, metric, score`` (rows with a non-numeric
                score are skipped and counted in ``self.skipped_``).
            model_meta: optional DataFrame ``model`` [+ ``family``, ``size``] for any models,
                including ones without records (to be ranked later).
            dataset_meta: optional DataFrame ``dataset`` [+ ``task``, ``description``].
        """
        self._fit_core(records, model_meta, dataset_meta, prepare_only=True)
        df = self._df
        del self._df
        self.best_epochs_ = self._select_epochs(records, model_meta, dataset_meta) if self.early_stopping else self.epochs
        self._train_epochs(df, self.best_epochs_)
        return self

    def _fit_core(self, records, model_meta, dataset_meta, *, monitor=None, prepare_only=False):
        from paperworks import resolve_device

        df, report = validate_records(records, metric_directions=self.metric_directions, return_report=True)
        self.skipped_ = report["skipped"]
        df = normalise(df, self.metric_directions)
        df["metric"] = df["metric"].str.lower()
        self.models_ = sorted(df["model"].unique())
        self.datasets_ = sorted(df["dataset"].unique())
        self.task_of_ = dict(zip(df["dataset"], df["task"]))
        self.metrics_ = sorted(df["metric"].unique())
        self.metric_index_ = {m: i + 1 for i, m in enumerate(self.metrics_)}
        self.metrics_by_task_ = {t: sorted(g["metric"].unique()) for t, g in df.groupby("task")}
        models, fam, size, datasets, task, desc = self._register(model_meta, dataset_meta)
        unseen_d = [d for d in datasets if d not in set(self.datasets_)]
        check_name_leakage(models, unseen_d)
        self.tasks_ = sorted(set(task.values()))
        self.task_index_ = {t: i + 1 for i, t in enumerate(self.tasks_)}
        families = sorted({fam[m] for m in self.models_})
        self.family_index_ = {f: i + 1 for i, f in enumerate(families)}
        logs = np.log10([size[m] for m in self.models_ if np.isfinite(size[m])] or [1.0])
        self.size_edges_ = np.quantile(logs, np.linspace(0, 1, N_SIZE_BUCKETS + 1)[1:-1])
        self._fit_encoders(models, [desc[d] for d in datasets])
        self._tables(models, fam, size, datasets, task, desc)
        self.device_ = resolve_device(self.device)
        if prepare_only:
            self._df = df
            return self
        self._train(df, monitor)
        return self

    def _train_epochs(self, df, epochs):
        full, self.epochs = self.epochs, epochs
        try:
            self._train(df)
        finally:
            self.epochs = full

    def _select_epochs(self, records, model_meta, dataset_meta) -> int:
        """Early stopping: the epoch count (a multiple of 25, ≤ ``epochs``) with the best mean τ_w on an inner
        split that holds out 15% of the training models and datasets (ranked as unseen entities)."""
        from modellens.metrics import weighted_tau
        from modellens.records import cold_start_split

        df = normalise(validate_records(records, metric_directions=self.metric_directions), self.metric_directions)
        inner = cold_start_split(df[["model", "dataset", "task", "metric", "score"]], "new_pair", frac=0.15,
                                 random_state=0 if self.random_state is None else int(self.random_state),
                                 metric_directions=self.metric_directions)
        val = df[df["dataset"].isin(inner.datasets)]
        groups = [(d, m, g) for (d, m), g in val.groupby(["dataset", "metric"]) if len(g) >= 2 and g["z"].std() > 0]
        if not groups or len(inner.train) < 10:
            return self.epochs
        params = {**self.get_params(), "early_stopping": False}
        probe = ModelLens(**params)
        mm = model_meta if model_meta is not None else pd.DataFrame({"model": sorted(df["model"].unique())})
        dm = dataset_meta
        if dm is None:
            dm = df.groupby("dataset")["task"].first().reset_index()
        elif "task" not in dm:
            dm = dm.merge(df.groupby("dataset")["task"].first().reset_index(), on="dataset", how="left")

        def score(lens):
            return float(np.mean([weighted_tau(g["z"].to_numpy(), lens.predict(list(g["model"]), d, m))
                                  for d, m, g in groups]))

        probe._fit_core(inner.train, mm, dm, monitor=(25, score))
        if not probe.val_history_:
            return self.epochs
        best = max(probe.val_history_, key=lambda x: x[1])
        self.inner_val_history_ = probe.val_history_
        return int(best[0])

    def _net(self):
        return LensNet(n_models=len(self.models_), n_datasets=len(self.datasets_), n_families=len(self.family_index_),
                       n_metrics=len(self.metrics_), n_tasks=len(self.tasks_), name_dim=self.m_name_.shape[1],
                       text_dim=self.d_text_.shape[1], dim=self.dim, views=self.views)

    def _train(self, df, monitor=None):
        gen = torch.Generator().manual_seed(0 if self.random_state is None else int(self.random_state))
        torch.manual_seed(0 if self.random_state is None else int(self.random_state))
        self.net_ = self._net().to(self.device_)
        # groups (dataset, metric) → padded (G, L) index tables
        groups = list(df.groupby(["dataset", "metric"]))
        L = max(len(g) for _, g in groups)
        G = len(groups)
        mi = np.zeros((G, L), dtype=np.int64)
        di = np.zeros((G, L), dtype=np.int64)
        me = np.zeros((G, L), dtype=np.int64)
        z = np.zeros((G, L), dtype=np.float32)
        mask = np.zeros((G, L), dtype=bool)
        for g, ((d, metric), rows) in enumerate(groups):
            n = len(rows)
            mi[g, :n] = [self.m_index_[m] for m in rows["model"]]
            di[g, :n] = self.d_index_[d]
            me[g, :n] = self.metric_index_[metric]
            z[g, :n] = rows["z"].to_numpy()
            mask[g, :n] = True
        dev = self.device_
        mi_t, di_t, me_t = (torch.tensor(a, device=dev) for a in (mi, di, me))
        z_t, mask_t = torch.tensor(z, device=dev), torch.tensor(mask, device=dev)
        tabs = self._device_tables(dev)
        opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        self.net_.train()
        self.history_, self.val_history_ = [], []
        for epoch in range(self.epochs):
            drop_m = torch.rand(G, L, generator=gen).to(dev) < self.id_dropout
            drop_d = torch.rand(G, L, generator=gen).to(dev) < self.id_dropout
            drop_n = torch.rand(G, L, generator=gen).to(dev) < self.name_dropout
            s = self._score_idx(tabs, mi_t, di_t, me_t, drop_m, drop_d, drop_n)
            tau = self.net_.log_tau.exp()
            loss = s.sum() * 0
            if "listwise" in self.losses:
                loss = loss + listwise_loss(s, z_t, mask_t, tau)
            if "pairwise" in self.losses:
                loss = loss + pairwise_loss(s, z_t, mask_t, tau)
            if "pointwise" in self.losses:
                loss = loss + pointwise_loss(s, z_t, mask_t)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"ModelLens: the loss diverged (non-finite) at epoch {epoch}")
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.history_.append(float(loss.detach()))
            if monitor is not None and (epoch + 1) % monitor[0] == 0:
                self.net_.eval()
                self.val_history_.append((epoch + 1, monitor[1](self)))
                self.net_.train()
        self.net_.eval()

    def _device_tables(self, dev):
        key = (str(dev), id(self.m_id_), id(self.d_id_))
        if getattr(self, "_tabs_key", None) != key:
            self._tabs = {k: getattr(self, k).to(dev) for k in ("m_id_", "m_name_", "m_fam_", "m_size_", "d_id_",
                                                                 "d_text_", "d_task_")}
            self._tabs_key = key
        return self._tabs

    def _score_idx(self, t, mi, di, me, drop_m=None, drop_d=None, drop_n=None):
        """Scores for index tensors of any shape (rows of the model / dataset tables, metric ids).

        Training passes boolean masks of the same shape: ``drop_m``/``drop_d`` replace the model /
        dataset ID by [UNK], ``drop_n`` zeroes the name features of the model.
        """
        shape = mi.shape
        mi, di, me = mi.reshape(-1), di.reshape(-1), me.reshape(-1)
        net = self.net_
        # every table row once (with its ID and with [UNK]), then gathered per record
        u_id = net.model_vec(t["m_id_"], t["m_name_"], t["m_fam_"], t["m_size_"])
        v_id = net.dataset_vec(t["d_id_"], t["d_text_"], t["d_task_"])
        u, v = u_id[mi], v_id[di]
        if drop_m is not None:
            zero_m = torch.zeros_like(t["m_id_"])
            u_unk = net.model_vec(zero_m, t["m_name_"], t["m_fam_"], t["m_size_"])
            u_unk_noname = net.model_vec(zero_m, torch.zeros_like(t["m_name_"]), t["m_fam_"], t["m_size_"])
            u_noname = net.model_vec(t["m_id_"], torch.zeros_like(t["m_name_"]), t["m_fam_"], t["m_size_"])
            dm_, dn_ = drop_m.reshape(-1, 1), drop_n.reshape(-1, 1)
            u = torch.where(dm_, torch.where(dn_, u_unk_noname[mi], u_unk[mi]), torch.where(dn_, u_noname[mi], u))
            v_unk = net.dataset_vec(torch.zeros_like(t["d_id_"]), t["d_text_"], t["d_task_"])
            v = torch.where(drop_d.reshape(-1, 1), v_unk[di], v)
        return net(u, v, me, t["m_fam_"][mi], t["m_size_"][mi]).reshape(shape)

    # inference -----------------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "net_"):
            raise RuntimeError("ModelLens is not fitted: call fit(records) first")

    def _model_rows(self, models):
        if isinstance(models, str):
            models = [models]
        models = [str(m) for m in models]
        if not models:
            raise ValueError("models (candidates) must not be empty")
        unknown = [m for m in models if m not in self.m_index_]
        if unknown:
            raise ValueError(f"unseen model(s) without meta: {unknown[:5]}; describe them in "
                             "fit(..., model_meta=...) or add_entities(model_meta=...)")
        return models, torch.tensor([self.m_index_[m] for m in models])

    def _dataset_row(self, dataset):
        if not isinstance(dataset, str):
            raise TypeError(f"dataset must be a name (str), got {type(dataset).__name__}")
        if dataset not in self.d_index_:
            raise ValueError(f"unseen dataset {dataset!r} without meta; describe it in "
                             "fit(..., dataset_meta=...) or add_entities(dataset_meta=...)")
        return self.d_index_[dataset]

    def _metric_id(self, metric, dataset):
        if metric is None:
            return None
        key = str(metric).lower()
        higher_is_better(key, self.metric_directions)  # unknown direction → error
        return self.metric_index_.get(key, 0)

    @torch.no_grad()
    def predict(self, models, dataset, metric) -> np.ndarray:
        """Predicted (oriented, z-scale) score of each model on ``dataset`` under ``metric``; higher is better."""
        self._check_fitted()
        models, mi = self._model_rows(models)
        d = self._dataset_row(dataset)
        metric_ids = self._metrics_for(metric, dataset)
        t = self._device_tables(self.device_)
        net, n, k = self.net_, len(models), len(metric_ids)
        mi = mi.to(self.device_)
        # the candidates' and the dataset's vectors once, then one scorer pass over all metrics
        u = net.model_vec(t["m_id_"][mi], t["m_name_"][mi], t["m_fam_"][mi], t["m_size_"][mi])
        v = net.dataset_vec(t["d_id_"][d:d + 1], t["d_text_"][d:d + 1], t["d_task_"][d:d + 1]).expand(n, -1)
        me = torch.tensor(metric_ids, device=self.device_).repeat_interleave(n)
        s = net(u.repeat(k, 1), v.repeat(k, 1), me, t["m_fam_"][mi].repeat(k), t["m_size_"][mi].repeat(k))
        return s.reshape(k, n).mean(0).cpu().numpy().astype(float)

    def _metrics_for(self, metric, dataset):
        if metric is not None:
            return [self._metric_id(metric, dataset)]
        task = self.task_of_[dataset]
        names = self.metrics_by_task_.get(task) or self.metrics_
        return [self.metric_index_[m] for m in names]

    def rank(self, dataset, candidates=None, metric=None, k=None) -> list[str]:
        """Candidates best-first (all known models when ``candidates`` is None; ``metric`` None: the
        mean over the metrics recorded for the dataset's task); the first ``k`` when given."""
        if k is not None:
            k = check_int(k, "k", minimum=1)
        self._check_fitted()
        cands = self.known_models_ if candidates is None else candidates
        names, _ = self._model_rows(cands)
        s = self.predict(names, dataset, metric)
        order = np.argsort(-s, kind="stable")
        out = [names[i] for i in order]
        return out if k is None else out[:k]

    def top_k_pool(self, dataset, k, candidates=None, metric=None) -> list[str]:
        """The Top-``k`` pool of models for ``dataset`` (what a router then chooses from)."""
        k = check_int(k, "k", minimum=1)
        return self.rank(dataset, candidates, metric, k=k)

    def export_pools(self, datasets, k, path=None, candidates=None) -> dict:
        """``{dataset: [model, ...]}`` Top-``k`` pools for routers; written as JSON to ``path`` if given."""
        pools = {d: self.top_k_pool(d, k, candidates) for d in datasets}
        if path is not None:
            from paperworks import atomic_write_text

            atomic_write_text(path, json.dumps({"k": k, "pools": pools}, indent=2))
        return pools

    def add_entities(self, model_meta=None, dataset_meta=None):
        """Describe more unseen models/datasets after fitting (encoded with the fitted encoders)."""
        self._check_fitted()
        models, fam, size, datasets, task, desc = self._register(model_meta, dataset_meta)
        fam = {**self.family_of_, **{m: f for m, f in fam.items() if m not in self.family_of_ or m in _names(model_meta, "model")}}
        size = {**size, **{m: s for m, s in self.size_of_.items() if m not in _names(model_meta, "model")}}
        desc = {**desc, **{d: t for d, t in self.description_of_.items() if d not in _names(dataset_meta, "dataset")}}
        check_name_leakage(models, [d for d in datasets if d not in set(self.datasets_)])
        self._tables(models, fam, size, datasets, task, desc)
        return self

    # persistence ---------------------------------------------------------------------------------

    def save(self, path) -> Path:
        """One self-contained file (weights, tables, encoders); ``ModelLens.load`` reads it with weights_only=True."""
        self._check_fitted()
        if self.text_vec_ is None:
            raise ValueError("save() supports text_encoder='tfidf' only (an external encoder is not serialisable)")
        nv, tv = self.name_vec_, self.text_vec_
        state = {
            "format": "modellens-1",
            "params": json.dumps({k: (list(v) if isinstance(v, tuple) else v) for k, v in self.get_params().items()
                                  if k != "text_encoder"}),
            "meta": json.dumps({"models": self.models_, "datasets": self.datasets_, "metrics": self.metrics_,
                                "tasks": self.tasks_, "families": list(self.family_index_),
                                "metrics_by_task": self.metrics_by_task_, "known_models": self.known_models_,
                                "known_datasets": self.known_datasets_, "task_of": self.task_of_,
                                "family_of": self.family_of_, "size_of": {k: (None if not np.isfinite(v) else v)
                                                                          for k, v in self.size_of_.items()},
                                "description_of": self.description_of_, "size_edges": self.size_edges_.tolist(),
                                "name_vocab": {k: int(v) for k, v in nv.vocabulary_.items()},
                                "text_vocab": {k: int(v) for k, v in tv.vocabulary_.items()}}),
            "name_idf": torch.tensor(nv.idf_), "text_idf": torch.tensor(tv.idf_),
            "svd": torch.tensor(self.svd_components_),
            "weights": {k: v.detach().cpu() for k, v in self.net_.state_dict().items()},
        }
        path = Path(path)
        atomic_torch_save(state, path)
        return path

    @classmethod
    def load(cls, path, device: str = "cpu") -> ModelLens:
        """Read a file written by :meth:`save` (``torch.load(weights_only=True)``)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        from paperworks import resolve_device

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no saved ModelLens at {path}")
        st = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(st, dict) or st.get("format") != "modellens-1":
            raise ValueError(f"{path} is not a saved ModelLens (format modellens-1)")
        params = json.loads(st["params"])
        params["losses"], params["views"] = tuple(params["losses"]), tuple(params["views"])
        params["device"] = device
        self = cls(**params)
        meta = json.loads(st["meta"])
        self.models_, self.datasets_, self.metrics_ = meta["models"], meta["datasets"], meta["metrics"]
        self.tasks_ = meta["tasks"]
        self.task_index_ = {t: i + 1 for i, t in enumerate(self.tasks_)}
        self.metric_index_ = {m: i + 1 for i, m in enumerate(self.metrics_)}
        self.family_index_ = {f: i + 1 for i, f in enumerate(meta["families"])}
        self.metrics_by_task_ = meta["metrics_by_task"]
        self.size_edges_ = np.asarray(meta["size_edges"])
        self.name_vec_ = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), vocabulary=meta["name_vocab"])
        self.name_vec_.idf_ = st["name_idf"].numpy()
        self.text_vec_ = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"[A-Za-z0-9.]+",
                                         vocabulary=meta["text_vocab"])
        self.text_vec_.idf_ = st["text_idf"].numpy()
        self.svd_components_ = st["svd"].numpy()
        self.task_of_ = meta["task_of"]
        size = {k: (np.nan if v is None else v) for k, v in meta["size_of"].items()}
        self._tables(meta["known_models"], meta["family_of"], size, meta["known_datasets"], meta["task_of"],
                     meta["description_of"])
        self.device_ = resolve_device(device)
        self.net_ = self._net()
        self.net_.load_state_dict(st["weights"])
        self.net_.to(self.device_).eval()
        self.skipped_ = 0
        return self


def _meta_frame(meta, name, key):
    if meta is None:
        return pd.DataFrame({key: []})
    if not isinstance(meta, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame or None, got {type(meta).__name__}")
    if key not in meta.columns:
        raise ValueError(f"{name} needs a {key!r} column, has {list(meta.columns)}")
    if meta[key].duplicated().any():
        raise ValueError(f"{name} lists {key}(s) twice: {list(meta[key][meta[key].duplicated()][:3])}")
    return meta


def _names(meta, key):
    return set() if meta is None else set(meta[key].astype(str))
