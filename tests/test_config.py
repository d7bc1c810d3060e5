"""Config loading: the default file loads; bad input is a one-line error naming it."""

import pytest

from spade_tasks.config import Config, load_config
from spade_tasks.errors import ConfigError


def test_embedded_default_loads():
    cfg = load_config("configs/cpu-tiny.yaml")
    assert isinstance(cfg, Config)
    assert cfg.model.name == "embedded:smollm2-135m" and cfg.sandbox.tier == "bwrap"


@pytest.mark.parametrize("text, needle", [
    ("model:\n  nmae: x\n", "model.nmae: unknown key"),
    ("sandbox:\n  call_timeout_s: fast\n", "sandbox.call_timeout_s"),
    ("sandbox:\n  tier: docker\n", "sandbox.tier"),
    ("run:\n  generations: 0\n", "run.generations"),
    ("bogus_section: {}\n", "bogus_section: unknown key"),
    ("model:\n  backend: sglang\n", "model.backend: Value error, unknown model backend 'sglang'"),
    ("designer:\n  reward: regert\n", "designer.reward: Value error, unknown designer reward"),
    ("eval:\n  every: 1\n  suites: [nope]\n", "unknown evaluation suite 'nope'"),
    ("model: [1, 2\n", "invalid YAML"),
    ("- just\n- a list\n", "top level must be a mapping"),
])
def test_bad_config_names_the_key_and_file(tmp_path, text, needle):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    msg = str(e.value)
    assert needle in msg and str(p) in msg and "\n" not in msg


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_config_is_frozen():
    cfg = Config()
    with pytest.raises(Exception):
        cfg.model.name = "other"


def test_registered_names_load():
    p = "configs/cpu-tiny.yaml"
    cfg = load_config(p)
    assert cfg.model.backend == "transformers" and cfg.designer.reward in ("regret", "blend")
