"""Hydra glue: a package's ``cli.py`` becomes three lines.

::

    from paperworks.hydra_glue import hydra_cli
    from mypkg.run import run

    main = hydra_cli("mypkg", run)

The package ships ``mypkg/conf/config.yaml`` (with an ``experiment`` group holding ``smoke``,
``quick``, ``paper`` and ``bench``; each may say ``experiment.description`` and
``experiment.expected_time``, shown by ``mypkg --help``). ``run(cfg, out_dir=None) -> dict`` is
pure: it returns ``{"claims": [Claim, ...], "metrics": [row, ...], "timings": {...},
"extra": {...}, "plots": callable}``. The glue checks the common keys, seeds, sets the thread
count, resolves the device, times the run, writes ``results.json``/``metrics.csv``
atomically into the Hydra run directory and only *then* calls ``plots(out_dir)``, so a run
without matplotlib still leaves its results (and logs "no plots").

Common keys (typed by :class:`CommonKeys`, a Hydra structured config): ``seed`` (int ≥ 0,
the index of a block of seeds: with ``seeds: N`` the run uses seeds ``seed·N … seed·N+N-1``,
so ``-m seed=0,1`` sweeps disjoint sets), ``seeds`` (N, or an explicit list), ``device``
(``auto|cpu|cuda[:N]``), ``threads`` (``auto`` or N: torch, BLAS and XLA pinned once).
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paperworks.device import resolve_device
from paperworks.results import git_commit, write_results
from paperworks.seeding import seed_everything, seeds_of

log = logging.getLogger("paperworks")


@dataclass
class CommonKeys:
    """The keys every package's config shares, with their types (checked before a run)."""

    seed: int = 0
    seeds: Any = None
    device: str = "auto"
    threads: Any = None


class ConfigError(ValueError):
    """A config key has a value of the wrong type or out of range."""


def check_common_keys(cfg) -> None:
    """Raise :class:`ConfigError` naming the key when a common key is mistyped (``seed=abc``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    base = OmegaConf.structured(CommonKeys)
    OmegaConf.set_struct(base, False)
    present = {k: cfg[k] for k in ("seed", "seeds", "device", "threads") if k in cfg}
    try:
        merged = OmegaConf.merge(base, OmegaConf.create(present))
    except OmegaConfBaseException as e:
        key = getattr(e, "full_key", None) or "?"
        raise ConfigError(f"config key {key!r}: {e.msg if hasattr(e, 'msg') else e}".split("\n")[0]) from None
    if merged.seed < 0:
        raise ConfigError(f"config key 'seed' must be >= 0, got {merged.seed}")
    s = merged.seeds
    if s is not None:
        ok = (isinstance(s, int) and not isinstance(s, bool) and s >= 1) or (
            OmegaConf.is_list(s) and len(s) > 0 and all(isinstance(v, int) and not isinstance(v, bool) for v in s))
        if not ok:
            raise ConfigError(f"config key 'seeds' must be a positive int or a list of ints, got {s!r}")
    t = merged.threads
    if t is not None and t != "auto" and (isinstance(t, bool) or not isinstance(t, int) or t < 1):
        raise ConfigError(f"config key 'threads' must be 'auto' or a positive int, got {t!r}")
    if not isinstance(merged.device, str):
        raise ConfigError(f"config key 'device' must be a string, got {merged.device!r}")


def _plot(package: str, plots: Callable, out_dir: Path) -> None:
    try:
        plots(out_dir)
    except ImportError as e:
        if "matplotlib" not in str(e):
            raise
        log.warning("no plots: matplotlib is not installed (pip install 'paperworks-%s[plot]')", package)


def execute(package: str, run: Callable, cfg, out_dir: str | Path | None) -> dict:
    """Check the common keys, seed, pin threads, resolve the device, run, write, then plot.

    The git commit is taken when the run starts (the code that ran), not when it ends: on a shared
    checkout, commits made while a long run goes on must not be credited to it.
    """
    from omegaconf import OmegaConf, open_dict

    from paperworks.threads import set_threads

    check_common_keys(cfg)
    source = Path(importlib.import_module(package).__file__).parent
    commit = git_commit(source) if out_dir is not None else None

    seeds = seeds_of(cfg)
    if cfg.get("threads", None) is not None:
        set_threads(cfg.threads)
    device = resolve_device(str(cfg.get("device", "auto")))
    with open_dict(cfg):
        cfg.device = device
    seed_everything(seeds[0])
    t0 = time.perf_counter()
    out = run(cfg, out_dir=Path(out_dir) if out_dir is not None else None)
    total = time.perf_counter() - t0
    if not isinstance(out, dict) or "claims" not in out:
        raise TypeError(f"{package}.run must return a dict with 'claims', got {type(out).__name__}")
    timings = {"total_s": total, **out.get("timings", {})}
    experiment = cfg.experiment.name if "experiment" in cfg and "name" in cfg.experiment else "smoke"
    if out_dir is None:
        return {"claims": [c.to_dict() for c in out["claims"]], "timings": timings}
    doc = write_results(
        out_dir, package=package, experiment=str(experiment), config=OmegaConf.to_container(cfg, resolve=True),
        claims=out["claims"], checks=out.get("checks", ()), seeds=out.get("seeds", seeds), timings=timings,
        metrics=out.get("metrics", ()), device=device, extra=out.get("extra"), source=source, commit=commit,
    )
    for c in doc["claims"]:
        log.info("claim %-28s %-14s %s", c["id"], c["verdict"], c["metric"])
    for c in doc["checks"]:
        log.info("check %-28s %-14s %s", c["id"], c["verdict"], c["metric"])
    log.info("results written to %s", Path(out_dir) / "results.json")
    if out.get("plots") is not None:
        _plot(package, out["plots"], Path(out_dir))
    return doc


def experiments(package: str) -> list[dict]:
    """The experiments a package ships: name, description and expected run time (from their yaml)."""
    import yaml

    conf = Path(importlib.import_module(f"{package}.conf").__file__).parent / "experiment"
    out = []
    order = {"smoke": 0, "quick": 1, "paper": 2, "bench": 3}
    for f in sorted(conf.glob("*.yaml"), key=lambda p: (order.get(p.stem, 9), p.stem)):
        text = f.read_text(encoding="utf-8")
        doc = yaml.safe_load(text) or {}
        exp = doc.get("experiment") or {}
        desc = exp.get("description")
        if not desc:
            comments = [ln.lstrip("# ").strip() for ln in text.splitlines()
                        if ln.startswith("#") and "@package" not in ln]
            desc = comments[0] if comments else ""
        out.append({"name": exp.get("name", f.stem), "description": desc,
                    "expected_time": exp.get("expected_time", "")})
    return out


def help_text(package: str, verbs: Sequence[str] = ()) -> str:
    """What ``<package> --help`` prints: the experiments, the verbs, the common keys, Hydra's own flags."""
    mod = importlib.import_module(package)
    summary = (mod.__doc__ or "").strip().splitlines()[0] if mod.__doc__ else package
    for sep in (" — ", " -- ", " - ", ": "):  # a docstring that starts with the package's own name
        if summary.startswith(package + sep):
            summary = summary[len(package + sep):]
    lines = [f"{package} — {summary}", "", f"usage: {package} [experiment=NAME] [key=value ...] [-m key=a,b ...]",
             "", "experiments:"]
    for e in experiments(package):
        when = f" ({e['expected_time']})" if e["expected_time"] else ""
        lines.append(f"  {e['name']:<8}{when} {e['description']}".rstrip())
    if verbs:
        lines += ["", "verbs (their own config; `<package> VERB --cfg job` shows it):"]
        lines += [f"  {package} {v} key=value ..." for v in verbs]
    lines += ["", "common keys:",
              "  seed=INT        index of the seed block (seeds seed*N .. seed*N+N-1 when seeds=N)",
              "  seeds=N|[..]    how many seeds (or which)",
              "  device=auto|cpu|cuda   threads=auto|N",
              "  experiment.name=NAME   name your own run (e.g. on your data)",
              "", "Runs write results.json, metrics.csv and plots into the Hydra run directory",
              "(hydra.run.dir=...). Sweeps: -m seed=0,1,2 [hydra/launcher=joblib]; pool them with",
              "`python -m paperworks aggregate <sweep dir>`.",
              "", f"Hydra's own help: {package} --hydra-help; the composed config: {package} --cfg job"]
    return "\n".join(lines)


def hydra_cli(package: str, run: Callable, config_name: str = "config", *,
              verbs: Mapping[str, Callable] | None = None) -> Callable[[], None]:
    """Build the console-script ``main`` for ``package`` (config in ``<package>/conf``).

    ``verbs``: ``{name: run_fn}`` for ``<package> NAME key=value ...`` (e.g. ``sample``, ``predict``):
    each runs ``run_fn`` like an experiment, with its own ``conf/NAME.yaml``.
    """
    if verbs:
        main_experiments = hydra_cli(package, run, config_name)
        dispatch = {name: hydra_cli(package, fn, config_name=name) for name, fn in verbs.items()}

        def main_with_verbs() -> None:
            if len(sys.argv) > 1 and sys.argv[1] in dispatch:
                dispatch[sys.argv.pop(1)]()
                return
            if any(a in ("--help", "-h") for a in sys.argv[1:]):
                print(help_text(package, list(dispatch)))
                return
            main_experiments()

        main_with_verbs.__name__ = "main"
        return main_with_verbs

    import hydra
    from hydra.core.hydra_config import HydraConfig

    @hydra.main(version_base=None, config_path=f"pkg://{package}.conf", config_name=config_name)
    def _hydra_main(cfg) -> None:
        try:
            execute(package, run, cfg, HydraConfig.get().runtime.output_dir)
        except ConfigError as e:
            print(f"{package}: {e}", file=sys.stderr)
            raise SystemExit(2) from None

    def main() -> None:
        if any(a in ("--help", "-h") for a in sys.argv[1:]):
            print(help_text(package))
            return
        _hydra_main()

    main.__name__ = "main"
    return main


def compose(package: str, overrides: Sequence[str] = (), config_name: str = "config", *,
            return_hydra_config: bool = False):
    """The resolved config of ``package`` with Hydra ``overrides``, for tests and notebooks.

    ``return_hydra_config=True`` keeps the ``hydra`` node (launcher, sweeper, run dirs), e.g. to check
    that ``hydra/launcher=submitit_slurm`` composes without a cluster.
    """
    from hydra import compose as _compose
    from hydra import initialize_config_module

    with initialize_config_module(config_module=f"{package}.conf", version_base=None):
        return _compose(config_name=config_name, overrides=list(overrides), return_hydra_config=return_hydra_config)
