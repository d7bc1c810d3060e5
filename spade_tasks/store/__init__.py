"""The run's DuckDB store: the ``Store`` connection (``db``) and every query the stages
ask of it, as named functions (``queries``). SQL lives only in this package; stages call
``queries.<name>(store, ...)`` and never write SQL themselves."""

from spade_tasks.store import queries
from spade_tasks.store.db import SCHEMA, Store
from spade_tasks.store.queries import *  # noqa: F403 - the query functions, re-exported

__all__ = ["SCHEMA", "Store", "queries", *queries.__all__]
