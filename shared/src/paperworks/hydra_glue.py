"""Hydra glue: a package's ``cli.py`` becomes three lines.

::

    from paperworks.hydra_glue import hydra_cli
    from mypkg.run import run

    main = hydra_cli("mypkg", run)

The package ships ``mypkg/conf/config.yaml`` (with an ``experiment`` group holding
``smoke``, ``quick``, ``paper`` and ``bench``). ``run(cfg, out_dir=None) -> dict`` is pure:
it returns ``{"claims": [Claim, ...], "metrics": [row, ...], "timings": {...}, "extra": {...}}``
and saves its plots into ``out_dir`` when one is given. The glue seeds, resolves the
device, times the run, and writes ``results.json``/``metrics.csv`` atomically into the
Hydra run directory.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from paperworks.device import resolve_device
from paperworks.results import git_commit, write_results
from paperworks.seeding import seed_everything, seeds_of

log = logging.getLogger("paperworks")


def execute(package: str, run: Callable, cfg, out_dir: str | Path | None) -> dict:
    """Seed, resolve the device, call ``run`` and (if ``out_dir``) write the results.

    The git commit is taken when the run starts (the code that ran), not when it ends: on a shared
    checkout, commits made while a long run goes on must not be credited to it.
    """
    from omegaconf import OmegaConf, open_dict

    source = Path(importlib.import_module(package).__file__).parent
    commit = git_commit(source) if out_dir is not None else None

    seeds = seeds_of(cfg)
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
        out_dir, package=package, experiment=experiment, config=OmegaConf.to_container(cfg, resolve=True),
        claims=out["claims"], seeds=out.get("seeds", seeds), timings=timings, metrics=out.get("metrics", ()),
        device=device, extra=out.get("extra"), source=source, commit=commit,
    )
    for c in doc["claims"]:
        log.info("claim %-28s %-14s %s", c["id"], c["verdict"], c["metric"])
    log.info("results written to %s", Path(out_dir) / "results.json")
    return doc


def hydra_cli(package: str, run: Callable, config_name: str = "config") -> Callable[[], None]:
    """Build the console-script ``main`` for ``package`` (config in ``<package>/conf``)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig

    @hydra.main(version_base=None, config_path=f"pkg://{package}.conf", config_name=config_name)
    def _main(cfg) -> None:
        execute(package, run, cfg, HydraConfig.get().runtime.output_dir)

    _main.__name__ = "main"
    return _main


def compose(package: str, overrides: Sequence[str] = (), config_name: str = "config"):
    """The resolved config of ``package`` with Hydra ``overrides``, for tests and notebooks."""
    from hydra import compose as _compose
    from hydra import initialize_config_module

    with initialize_config_module(config_module=f"{package}.conf", version_base=None):
        return _compose(config_name=config_name, overrides=list(overrides))
