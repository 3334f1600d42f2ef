"""Logging that survives worker processes.

Hydra configures logging in the main process only; a ``ProcessPoolExecutor`` worker (spawned)
starts with none, so its records vanish. :func:`process_pool` gives workers a
``QueueHandler`` and forwards their records, through a ``QueueListener`` in the parent, to
the parent's handlers (Hydra's console and ``<run dir>/<job>.log``)::

    from paperworks.logs import process_pool

    with process_pool(2) as ex:
        results = list(ex.map(work, cells))
"""

from __future__ import annotations

import logging
import logging.handlers
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager


def _worker_init(queue, level, user_init, user_args) -> None:
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(queue)]
    root.setLevel(level)
    if user_init is not None:
        user_init(*user_args)


@contextmanager
def process_pool(max_workers: int, *, context: str = "spawn", initializer=None, initargs=()):
    """A ``ProcessPoolExecutor`` whose workers log into the parent's handlers."""
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise ValueError(f"max_workers must be a positive int, got {max_workers!r}")
    ctx = multiprocessing.get_context(context)
    queue = ctx.Manager().Queue() if context != "fork" else ctx.Queue()
    root = logging.getLogger()
    listener = logging.handlers.QueueListener(queue, *root.handlers, respect_handler_level=True)
    listener.start()
    try:
        with ProcessPoolExecutor(max_workers, mp_context=ctx, initializer=_worker_init,
                                 initargs=(queue, root.level, initializer, tuple(initargs))) as ex:
            yield ex
    finally:
        listener.stop()
