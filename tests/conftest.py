import os

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def sandbox():
    """One bwrap-tier sandbox for the session (each episode still gets its own worker)."""
    from spade_tasks.config import SandboxConfig
    from spade_tasks.sandbox import Sandbox

    return Sandbox(SandboxConfig(call_timeout_s=3.0, load_timeout_s=10.0, cpu_seconds=10))
