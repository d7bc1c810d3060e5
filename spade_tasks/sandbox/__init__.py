"""Isolated execution of untrusted environment programs (see harness.py's docstring)."""

from spade_tasks.sandbox.harness import CallResult, Episode, ProgramMeta, Sandbox, bwrap_available

__all__ = ["CallResult", "Episode", "ProgramMeta", "Sandbox", "bwrap_available"]
