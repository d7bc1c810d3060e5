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


# -- where relative paths point (one rule, the same from any directory) ----------------


def test_paths_resolve_against_the_config_file_and_the_base(tmp_path, monkeypatch):
    from spade_tasks.config import REPO_ROOT

    folder = tmp_path / "exp"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "docs.jsonl").write_text('{"text": "hello"}\n')
    (folder / "ds.json").write_text("{}")
    (folder / "pool").mkdir()
    (folder / "ckpt").mkdir()
    cfg_file = folder / "c.yaml"
    cfg_file.write_text("corpus: {source: data/docs.jsonl}\nmodel: {name: ./ckpt}\n"
                        "training: {deepspeed_config: ds.json}\ndesigner: {fixed_pool: [pool]}\n")
    monkeypatch.chdir(tmp_path)  # neither the config's folder nor the project
    monkeypatch.delenv("SPADE_ROOT", raising=False)
    cfg = load_config("exp/c.yaml")
    assert cfg.corpus.source == str(folder / "data" / "docs.jsonl")
    assert cfg.model.name == str(folder / "ckpt")
    assert cfg.training.deepspeed_config == folder / "ds.json"
    assert cfg.designer.fixed_pool == [folder / "pool"]
    # Run state is keyed to the project, or to $SPADE_ROOT (what --root sets).
    assert cfg.run.root == REPO_ROOT / "runs"
    assert cfg.tracking.mlflow_uri == f"sqlite:///{REPO_ROOT / 'runs' / 'mlflow.db'}"
    monkeypatch.setenv("SPADE_ROOT", str(tmp_path / "state"))
    cfg = load_config(cfg_file)
    assert cfg.run.root == tmp_path / "state" / "runs"
    assert cfg.tracking.mlflow_uri == f"sqlite:///{tmp_path / 'state' / 'runs' / 'mlflow.db'}"
    assert load_config(None).run.root == tmp_path / "state" / "runs"
    (folder / "ckpt").rmdir()
    with pytest.raises(ConfigError, match=f"c.yaml: model.name: {folder / 'ckpt'}: no such"):
        load_config(cfg_file)


def test_names_that_are_not_paths_stay_names(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("corpus: {source: allenai/c4}\nmodel: {name: Qwen/Qwen3-8B}\n"
                        "run: {root: /abs/runs}\ntracking: {mlflow_uri: 'http://mlflow:5000'}\n")
    cfg = load_config(cfg_file)
    assert cfg.corpus.source == "allenai/c4" and cfg.model.name == "Qwen/Qwen3-8B"
    assert str(cfg.run.root) == "/abs/runs" and cfg.tracking.mlflow_uri == "http://mlflow:5000"


def test_missing_corpus_file_names_key_and_file(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("corpus: {source: missing.parquet}\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg_file)
    assert str(e.value) == (f"{cfg_file}: corpus.source: {tmp_path / 'missing.parquet'}: "
                            "no such file or folder")


@pytest.mark.parametrize("key", ["designer.fixed_pool", "designer.seed_pool",
                                 "warmstart.sources"])
def test_missing_program_folder_names_key_and_folder(tmp_path, key):
    section, name = key.split(".")
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(f"{section}: {{{name}: [gone]}}\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg_file)
    assert str(e.value) == f"{cfg_file}: {key}: {tmp_path / 'gone'}: no such folder"


def test_every_shipped_config_loads_from_elsewhere_with_its_files(tmp_path, monkeypatch):
    from spade_tasks.config import REPO_ROOT

    monkeypatch.chdir(tmp_path)
    for path in sorted((REPO_ROOT / "configs").glob("*.yaml")):
        cfg = load_config(path)
        assert cfg.training.deepspeed_config.is_file(), path
        assert all(p.is_dir() for p in cfg.designer.fixed_pool), path


def test_readme_reference_is_the_generated_one():
    from spade_tasks.config import README_MARKERS, REPO_ROOT, reference_markdown

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start, end = README_MARKERS
    assert start in readme and end in readme, "README lost its configuration reference markers"
    section = readme.split(start, 1)[1].split(end, 1)[0]
    assert section.strip() == reference_markdown().strip(), (
        "README's configuration reference is stale: regenerate it with "
        "`python -m spade_tasks.config --update-readme`")


def test_registered_names_load():
    p = "configs/cpu-tiny.yaml"
    cfg = load_config(p)
    assert cfg.model.backend == "transformers" and cfg.designer.reward in ("regret", "blend")
