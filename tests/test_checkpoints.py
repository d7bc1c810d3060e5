"""Checkpoint retention, MLflow models of checkpoints, and where MLflow artifacts go.

Checkpoints here are real Hugging Face folders of a tiny randomly initialised Llama (a
few hundred kB), so MLflow's transformers flavour logs and loads them in about a second.
"""

import json
import os
from pathlib import Path

import pytest

from spade_tasks.checkpoints import (Checkpoint, check_metric_name, checkpoint_scores,
                                     choose_kept, keep_stage)
from spade_tasks.config import Config, load_config
from spade_tasks.errors import ConfigError

os.environ.setdefault("HF_HUB_OFFLINE", "1")


# ---------------------------------------------------------------- pure choices


def _cks(n):
    return [Checkpoint(g, f"/c/gen-{g}") for g in range(n)]


def test_keeps_the_last_k():
    assert choose_kept(_cks(5), 2) == {"/c/gen-3", "/c/gen-4"}
    assert choose_kept(_cks(1), 3) == {"/c/gen-0"}


@pytest.mark.parametrize("mode, best", [("max", "/c/gen-1"), ("min", "/c/gen-0")])
def test_keeps_the_best_besides_the_last(mode, best):
    scores = {"/c/gen-0": 0.1, "/c/gen-1": 0.9, "/c/gen-2": 0.5, "/c/gen-4": 0.95}
    # gen-4's score is the best, but it is kept anyway as the newest: the best among
    # all still wins, so only the last two are kept with "max".
    kept = choose_kept(_cks(5), 2, {k: v for k, v in scores.items() if k != "/c/gen-4"}, mode)
    assert kept == {"/c/gen-3", "/c/gen-4", best}


def test_scores_go_to_the_weights_that_were_measured():
    gens = [
        # generation 1 played with gen-0's weights and wrote gen-1
        {"trained_from": "/c/gen-0", "checkpoint": "/c/gen-1", "agent_reward": 0.2,
         "eval.rg": 0.7},
        # generation 2 took no step: it played and evaluated gen-1's weights
        {"trained_from": "/c/gen-1", "checkpoint": None, "agent_reward": 0.4, "eval.rg": 0.5},
        {"trained_from": "/c/gen-1", "checkpoint": "/c/gen-3", "agent_reward": 0.6},
    ]
    assert checkpoint_scores("agent_reward", gens) == pytest.approx({"/c/gen-0": 0.2,
                                                                     "/c/gen-1": 0.5})
    assert checkpoint_scores("eval.rg", gens) == pytest.approx({"/c/gen-1": 0.6})


def test_unknown_metric_is_a_config_error(tmp_path):
    assert check_metric_name("eval.reasoning-gym") == "eval.reasoning-gym"
    p = tmp_path / "c.yaml"
    p.write_text("training:\n  keep_best_metric: agent_rewrd\n")
    with pytest.raises(ConfigError, match="training.keep_best_metric: .*agent_rewrd"):
        load_config(p)
    p.write_text("training:\n  keep_last: 0\n")
    with pytest.raises(ConfigError, match="training.keep_last"):
        load_config(p)


# ---------------------------------------------------------------- on disk and in MLflow


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """One tiny Llama checkpoint with the embedded model's tokenizer (copied per test)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from spade_tasks.llm.loading import load_tokenizer, resolve_model

    tok = load_tokenizer(resolve_model("embedded:smollm2-135m"))
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64))
    out = tmp_path_factory.mktemp("tiny") / "model"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _runtime(tmp_path, **training):
    from spade_tasks.runtime import open_runtime

    cfg = Config.model_validate({
        "run": {"name": "ck", "root": str(tmp_path / "runs")},
        "tracking": {"mlflow_uri": f"sqlite:///{tmp_path}/mlflow.db"},
        "training": training})
    return open_runtime(cfg)


def _write_generation(rt, generation, src, metrics, step=True):
    """A finished generation as train_stage and log_stage leave it (with a fake
    optimizer-state file standing in for DeepSpeed's)."""
    import shutil

    path = None
    if step:
        path = rt.run_dir / "checkpoints" / f"gen-{generation:04d}"
        shutil.copytree(src, path)
        (path / "deepspeed").mkdir()
        (path / "deepspeed" / "latest").write_text("step")
        path = str(path)
    trained_from = rt.latest_checkpoint() or rt.cfg.model.name
    rt.begin_generation(generation)
    tr = rt.tracker
    child = tr.generation_run(tr.parent_run(), generation)
    rt.finish_generation(generation, path, {"trained_from": trained_from, "checkpoint": path,
                                            **metrics}, child)
    return child, keep_stage(rt, generation, child)


def test_retention_deletes_old_keeps_best_and_resume_point(tmp_path, tiny_checkpoint):
    from mlflow import MlflowClient

    from spade_tasks.runtime import close_all

    rt = _runtime(tmp_path, keep_last=2, keep_best_metric="agent_reward")
    try:
        # gen-0's weights play generation 1 best (0.9); later ones score lower.
        rewards = [0.1, 0.9, 0.2, 0.3, 0.1]
        runs = [_write_generation(rt, g, tiny_checkpoint, {"agent_reward": r})
                for g, r in enumerate(rewards)]
        ck = rt.run_dir / "checkpoints"
        assert sorted(p.name for p in ck.iterdir()) == ["gen-0000", "gen-0003", "gen-0004"]
        # Only the newest keeps the optimizer state a resume needs.
        assert (ck / "gen-0004/deepspeed/latest").is_file()
        assert not (ck / "gen-0000/deepspeed").exists()
        assert not (ck / "gen-0003/deepspeed").exists()
        assert rt.latest_checkpoint() == str(ck / "gen-0004")
        assert runs[-1][1]["checkpoints_deleted"] == [str(ck / "gen-0002")]

        # A generation that took no step writes nothing and keeps the resume point.
        _, out = _write_generation(rt, 5, tiny_checkpoint, {"agent_reward": 0.0}, step=False)
        assert rt.latest_checkpoint() == str(ck / "gen-0004")
        assert (ck / "gen-0004/deepspeed/latest").is_file()

        client = MlflowClient(tracking_uri=rt.cfg.tracking.mlflow_uri)
        rows = rt.store.rows("SELECT generation, mlflow_model_id, deleted_at FROM checkpoints"
                             " ORDER BY generation")
        assert [r["generation"] for r in rows] == [0, 1, 2, 3, 4]
        assert [r["deleted_at"] is None for r in rows] == [True, False, False, True, True]
        for r in rows:
            if r["deleted_at"] is None:
                model = client.get_logged_model(r["mlflow_model_id"])
                assert model.source_run_id == runs[r["generation"]][0]
                files = Path(model.artifact_location.removeprefix("file://"))
                assert (files / "MLmodel").is_file()
                assert files.is_relative_to(tmp_path / "runs" / "mlartifacts")
            else:  # retention removed the model, and its copy of the weights
                with pytest.raises(Exception, match="not found|deleted|NOT_FOUND"):
                    client.get_logged_model(r["mlflow_model_id"])
        models = client.search_logged_models([rt.tracker.experiment_id])
        assert len(models) == 3
    finally:
        close_all()


def test_kept_checkpoint_loads_with_mlflow_transformers(tmp_path, tiny_checkpoint):
    import mlflow
    import torch
    from transformers import AutoModelForCausalLM

    from spade_tasks.runtime import close_all

    rt = _runtime(tmp_path, keep_best_metric=None)
    try:
        child, out = _write_generation(rt, 0, tiny_checkpoint, {})
        uri = out["checkpoint_model_uri"]
        mlflow.set_tracking_uri(rt.cfg.tracking.mlflow_uri)
        comps = mlflow.transformers.load_model(uri, return_type="components")
        want = AutoModelForCausalLM.from_pretrained(tiny_checkpoint)
        ids = torch.tensor([[1, 2, 3, 4]])
        with torch.no_grad():
            assert torch.equal(comps["model"](input_ids=ids).logits, want(input_ids=ids).logits)
        assert "tokenizer" in comps
        # The optimizer state stays out of the MLflow copy.
        local = mlflow.artifacts.download_artifacts(uri)
        assert not list(Path(local).rglob("latest"))
        # A retried log_generation does not log the model again.
        again = keep_stage(rt, 0, child)
        assert "checkpoint_model_uri" not in again
    finally:
        close_all()


def _empty_rollout():
    """The scores and play record of a generation that played nothing: what
    train_stage is handed when its samples come from elsewhere (or there are none)."""
    from spade_tasks.records import Played, Scores

    scores = Scores(environments_played=0, regret_mean=0.0, win_rate_no_hint=0.0,
                    win_rate_hint=0.0, designer_reward_mean=0.0, baseline_win_rate=None)
    played = Played(episodes=0, environments=[], environments_new=0, environments_pool=0,
                    hints_model=0, hints_dropped=0, hints_env_refused=0,
                    environments_overflow=[], environments_unhinted=[],
                    rollout_workers=1, rollout_tokens=0, rollout_tokens_per_s=0.0,
                    end_reasons={})
    return scores, played


def test_no_step_writes_no_checkpoint(tmp_path):
    from spade_tasks.runtime import close_all
    from spade_tasks.training import train_stage

    rt = _runtime(tmp_path)
    try:
        rt.begin_generation(0)
        result = train_stage(rt, 0, *_empty_rollout())  # an empty generation: nothing to train on
        assert result.checkpoint is None and "skipped" in result.to_summary()
        assert "loss" not in result.to_summary()
        assert not (rt.run_dir / "checkpoints").exists()
        assert rt._trainer is None  # the model was not even loaded
        assert rt.latest_checkpoint() is None
    finally:
        close_all()


def test_each_generation_takes_the_configured_number_of_updates(tmp_path, monkeypatch):
    """train_stage steps ``training.updates_per_generation`` times on the same samples
    (a recording trainer stands in for DeepSpeed) and reports every update's time."""
    from spade_tasks import training
    from spade_tasks.runtime import close_all
    from spade_tasks.training import StepMetrics, TrainSample, train_stage

    samples = [TrainSample("designer", [1, 2], [3], [-0.5], 1.0),
               TrainSample("agent", [1, 2], [4, 5], [-0.5, -0.7], -1.0)]

    class Recorder:
        def __init__(self):
            self.calls = []

        def step(self, batch):
            self.calls.append(list(batch))
            n = len(self.calls)
            return StepMetrics(loss=0.1 * n, clip_fraction=0.0, approx_kl=0.01 * n,
                               mean_ratio=1.0, tokens=3, tokens_processed=7,
                               tokens_per_s=7.0, step_time_s=1.0, grad_norm=1.0,
                               tokens_by_role={"designer": 1, "agent": 2})

    rt = _runtime(tmp_path, updates_per_generation=3)
    try:
        rt.begin_generation(0)
        recorder = rt._trainer = Recorder()
        monkeypatch.setattr(training, "generation_samples", lambda rt, generation: samples)
        monkeypatch.setattr(rt, "save_checkpoint", lambda generation: "ckpt-0")
        result = train_stage(rt, 0, *_empty_rollout())
        assert recorder.calls == [samples] * 3
        assert result.train_updates == 3 and result.train_step_s == 3.0
        assert result.loss == pytest.approx(0.3)  # the last update's metrics
        assert result.approx_kl == pytest.approx(0.03)
        assert result.checkpoint == "ckpt-0"
    finally:
        close_all()


def test_artifacts_live_under_the_run_root_with_rejected_designs(tmp_path, monkeypatch):
    from mlflow import MlflowClient

    from spade_tasks.runtime import close_all
    from spade_tasks.tracking import log_stage

    cwd = tmp_path / "elsewhere"  # not the run root: nothing may land here
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    rt = _runtime(tmp_path)
    try:
        rt.begin_generation(0)
        rt.store.upsert("designs", {
            "run": "ck", "generation": 0, "design_idx": 0, "doc_id": "doc-7",
            "completion": "class BadEnv:\n    pass\n", "accepted": False,
            "reasons": ["structure: no reset method"], "reward": -1.0})
        out = log_stage(rt, 0, {"generation": 0, "checkpoint": None, "trained_from": "base"})
        client = MlflowClient(tracking_uri=rt.cfg.tracking.mlflow_uri)
        run = client.get_run(out["mlflow_run_id"])
        root = Path(run.info.artifact_uri.removeprefix("file://"))
        assert root.is_relative_to(tmp_path / "runs" / "mlartifacts")
        text = (root / "rejected" / "design-000.md").read_text()
        assert "structure: no reset method" in text and "class BadEnv:" in text
        assert "doc-7" in text
        assert json.loads((root / "rejections.json").read_text()) == {
            "0": ["structure: no reset method"]}
        assert not list(cwd.iterdir())  # no ./mlruns
    finally:
        close_all()
