"""Prefect plumbing shared by the flows and the CLI: stage resume, the retry rule, the
API server a command reports to, and the task runner a config asks for.

The flows themselves live in ``flows/`` (they import this package, never the reverse);
what needs a flow object takes it as an argument.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import TypeVar

from prefect import Flow, get_run_logger
from prefect.exceptions import MissingContextError
from prefect.task_runners import ThreadPoolTaskRunner

from spade_tasks.config import Config
from spade_tasks.errors import PrefectUnavailable, UserError
from spade_tasks.records import Record
from spade_tasks.runtime import Runtime

R = TypeVar("R", bound=Record)


def _logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run's logger; a plain one outside a run (a stage called directly)."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def finished(rt: Runtime, generation: int, name: str, record: type[R]) -> R | None:
    """The record a stage stored when it finished in this generation; None if it has not."""
    done = rt.stage_result(generation, name)
    return None if done is None else record.load(done)


# Resume is our own, not Prefect's result caching or transactions: a stage's record is a
# row of the run's DuckDB (``Runtime.mark_stage``), written after the stage's own writes
# to that file have committed. A stage therefore counts as finished only where its rows
# are, and the record goes wherever the store goes (a copied, deleted or restored run
# folder). Prefect keeps cached results in its own result storage, keyed by the task's
# inputs, and its transactions commit that storage, not DuckDB: a cache hit could return
# a record whose rows are gone (a deleted or recreated run folder, the same config) or
# belong to another store.
def staged(rt: Runtime, generation: int, name: str, record: type[R], fn: Callable[[], R]) -> R:
    """Run ``fn`` unless the stage already finished in this generation (resume): its
    record is stored as JSON when it finishes, and a rerun gets the same record back."""
    done = finished(rt, generation, name, record)
    if done is not None:
        _logger().info("%s: finished earlier, skipped", name)
        rt.timings.setdefault(name, 0.0)
        return done
    _logger().info("%s: started (generation %d)", name, generation)
    t0 = time.perf_counter()
    result = fn()
    if not isinstance(result, record):
        raise TypeError(f"stage {name} returned {type(result).__name__}, not {record.__name__}")
    seconds = time.perf_counter() - t0
    rt.timings[name] = seconds
    rt.mark_stage(generation, name, result.dump(), seconds)
    return result


def transient(state) -> bool:
    """Retry only failures a second try can fix: connection and server errors."""
    try:
        state.result()
    except (ConnectionError, TimeoutError, OSError) as e:
        return not isinstance(e, (FileNotFoundError, PermissionError))
    except Exception:  # noqa: BLE001 - anything else is deterministic: no retry
        return False
    return False


SERVER_STARTUP_S = 180
"""The least time a temporary Prefect server is given to answer (a larger
``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` wins)."""


@contextmanager
def prefect_api():
    """The Prefect API this process and its task workers report to: ``PREFECT_API_URL``
    when set, else one temporary local server for all generations of this command (so
    Ray workers join it instead of each starting their own)."""
    url = os.environ.get("PREFECT_API_URL")
    if url:
        yield url
        return
    # Prefect's server stack is imported only when a temporary server is started.
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (PREFECT_API_URL,
                                  PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
                                  temporary_settings)

    server = SubprocessASGIServer()
    # The first start in a new home creates and migrates Prefect's database, which on 2
    # busy cores outlasts Prefect's 20 s default ("Timed out while attempting to connect
    # to ephemeral Prefect API server"); a longer wait costs nothing when it starts fast.
    wait = max(SERVER_STARTUP_S, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
    try:
        server.start(timeout=wait)
    except RuntimeError as e:  # Prefect's only signal that the server never answered
        # Its message goes on with the server's whole output: the first line says enough.
        first = (str(e).splitlines() or [""])[0][:200]
        raise PrefectUnavailable(
            f"the temporary Prefect server did not answer within {wait:.0f} s ({first}); "
            "start one (`prefect server start`) and set PREFECT_API_URL, or raise "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") from e
    try:
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            yield server.api_url
    finally:
        _drain_prefect_workers()
        server.stop()


def _drain_prefect_workers(timeout: float = 10.0) -> None:
    """Send the logs and events still queued for the API before its server stops:
    left queued, they are retried at interpreter exit against a dead server, which
    delays the exit by up to a minute and ends with '--- Error logging to API ---'."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=timeout)


def flow_for(flow: Flow, cfg: Config, api_url: str | None = None) -> Flow:
    """``flow`` on the task runner the config asks for."""
    orch = cfg.orchestration
    if orch.task_runner == "ray":
        try:
            # Ray is an optional extra, and heavy: imported only when asked for.
            from prefect_ray import RayTaskRunner
        except ImportError:
            raise UserError("orchestration.task_runner: ray needs the ray extra "
                            "(pip install -e '.[ray]')") from None
        # No address means a new local instance, never whatever cluster a stale
        # /tmp/ray/ray_current_cluster names (Ray's own default for no address).
        init = ({"address": "local", "num_cpus": orch.max_workers}
                if orch.ray_address is None else {})
        if api_url:
            env = {"PREFECT_API_URL": api_url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
            init["runtime_env"] = {"env_vars": env}
        return flow.with_options(task_runner=RayTaskRunner(address=orch.ray_address,
                                                           init_kwargs=init))
    return flow.with_options(task_runner=ThreadPoolTaskRunner(max_workers=orch.max_workers))
