"""Build locks of torch C++ extensions compiled at run time, left by killed builds.

``torch.utils.cpp_extension`` marks a build in progress with a ``lock`` file in the
extension's build folder, and a second process waits until the file is gone. A process
killed while it builds (Ctrl-C during a first run, a run stopped while its warm start
starts DeepSpeed) leaves the file behind, and every later process waits on it forever
without a word: a run's train step once sat idle for 27 minutes on DeepSpeed's
shared-memory op. Both extensions this project builds, its small-batch linear kernel
and DeepSpeed's op, clear such a lock first.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

log = logging.getLogger(__name__)

STALE_LOCK_S = 600  # a build takes a minute or two; a lock this old has no builder left


def remove_stale_build_lock(name: str) -> None:
    """Remove extension ``name``'s build lock if it is older than ``STALE_LOCK_S``; a
    fresh one (a build in progress in another process) stays."""
    from torch.utils import cpp_extension

    try:
        lock = Path(cpp_extension._get_build_directory(name, False)) / "lock"
        if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            log.warning("removing a stale extension build lock: %s", lock)
            lock.unlink()
    except (OSError, AttributeError):
        pass  # no lock, or a torch without the helper: nothing to clear
