"""The stages' typed records: each round-trips through stage resume (``staged``) as the
same record, results stored before the records existed load, and the summaries keep the
keys the generation summary has always had."""

import math

import pytest

from spade_tasks.config import Config, RunConfig
from spade_tasks.orchestration import finished, staged
from spade_tasks.records import (Designs, Documents, EvalReport, MemoryReport, Played, Scores,
                                 TrainReport, Verdicts, WarmstartReport)
from spade_tasks.runtime import Runtime
from spade_tasks.store import Store

PLAYED = Played(episode_ids=["e-0", "e-h-0"], episodes=2, environments=["e"],
                environments_new=1, environments_pool=0, hints_model=1, hints_dropped=0,
                hints_env_refused=0, environments_overflow=[], environments_unhinted=[],
                rollout_workers=1, rollout_tokens=12, rollout_tokens_per_s=3.5,
                end_reasons={"terminated": 2})
SCORES = Scores(regret_by_env={"e": 0.5}, environments_played=1, regret_mean=0.5,
                win_rate_no_hint=0.0, win_rate_hint=0.5, designer_reward_mean=0.25,
                baseline_win_rate=None)
STEPPED = TrainReport(trained_from="base", train_samples=3, train_samples_designer=1,
                      train_samples_agent=2, train_world_size=1, loss=math.nan, approx_kl=0.0,
                      clip_fraction=0.0, grad_norm=1.5, mean_ratio=1.0, train_tokens=40,
                      train_tokens_per_s=10.0, train_step_s=4.0, kl_ref=None,
                      checkpoint="/run/gen-0000")
SKIPPED = TrainReport(trained_from="base", train_samples=0, train_samples_designer=0,
                      train_samples_agent=0, train_world_size=1,
                      skipped="no sample with a non-zero advantage")
RECORDS = [
    Documents(doc_ids=["d1", "d2"]), Documents(),
    WarmstartReport.skipped("off"),
    WarmstartReport(warmstart_pairs=4, warmstart_programs=2, warmstart_steps=2,
                    warmstart_losses=[2.0, 1.5], warmstart_loss_first=2.0,
                    warmstart_loss_last=1.5, warmstart_s=3.0, checkpoint="/cache/ws"),
    Designs(design_ids=[0, 1, 2]), Verdicts(accepted_env_ids=["e"], rejected=2),
    PLAYED, SCORES, STEPPED, SKIPPED,
    MemoryReport(memory_added=1, memory_refused=0, memory_evicted=0, memory_size=5,
                 memory_diversity=0.75),
    EvalReport(scores={"reasoning-gym": 0.5}, items={"reasoning-gym": 4}), EvalReport(),
]


def _same(a, b) -> bool:
    """Equal, counting NaN equal to NaN (a NaN loss must come back NaN)."""
    return a.model_dump_json() == b.model_dump_json()


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_record_round_trips_through_stage_resume(tmp_path, record):
    with Store(tmp_path / "s.duckdb") as store:
        rt = Runtime(Config(run=RunConfig(name="r", root=tmp_path)), store)
        calls = []

        def stage():
            calls.append(1)
            return record

        first = staged(rt, 0, "stage", type(record), stage)
        again = staged(rt, 0, "stage", type(record), stage)  # a rerun: resumed, not run
        assert calls == [1] and first is record
        assert type(again) is type(record) and _same(again, record)
        assert _same(finished(rt, 0, "stage", type(record)), record)
        assert finished(rt, 1, "stage", type(record)) is None


def test_a_stage_that_returns_the_wrong_record_is_refused(tmp_path):
    with Store(tmp_path / "s.duckdb") as store:
        rt = Runtime(Config(run=RunConfig(name="r", root=tmp_path)), store)
        with pytest.raises(TypeError, match="returned Designs, not Verdicts"):
            staged(rt, 0, "validate_environments", Verdicts, lambda: Designs())
        assert rt.stage_result(0, "validate_environments") is None


def test_results_stored_before_the_records_load():
    assert Documents.load(["d1"]) == Documents(doc_ids=["d1"])
    assert Designs.load([0, 1]).design_ids == (0, 1)
    assert Verdicts.load(["e"]).accepted_env_ids == ("e",)
    assert EvalReport.load({"eval.humaneval": 0.5, "eval.humaneval.n": 2}) == EvalReport(
        scores={"humaneval": 0.5}, items={"humaneval": 2})
    assert EvalReport.load({}) == EvalReport()
    legacy_rollout = PLAYED.to_summary()  # no episode ids then
    assert Played.load(legacy_rollout).episodes == 2


def test_summaries_keep_the_keys_the_flow_always_logged():
    assert Documents(doc_ids=["a", "b"]).to_summary() == {"documents": 2}
    assert Designs(design_ids=[3]).to_summary() == {"designs": 1}
    assert Verdicts(accepted_env_ids=["e"], rejected=2).to_summary() == {"accepted": 1}
    assert PLAYED.to_summary() == {
        "episodes": 2, "environments": ["e"], "environments_new": 1, "environments_pool": 0,
        "hints_model": 1, "hints_dropped": 0, "hints_env_refused": 0,
        "environments_overflow": [], "environments_unhinted": [], "flat_rounds": 0,
        "rollout_workers": 1,
        "rollout_tokens": 12, "rollout_tokens_per_s": 3.5, "end_reasons": {"terminated": 2}}
    assert list(SCORES.to_summary()) == ["environments_played", "regret_mean",
                                         "win_rate_no_hint", "win_rate_hint",
                                         "designer_reward_mean", "baseline_win_rate"]
    assert list(STEPPED.to_summary()) == [
        "trained_from", "train_samples", "train_samples_designer", "train_samples_agent",
        "train_world_size", "train_updates", "loss", "approx_kl", "clip_fraction", "grad_norm", "mean_ratio",
        "train_tokens", "train_tokens_per_s", "train_step_s", "kl_ref", "checkpoint"]
    assert SKIPPED.to_summary() == {
        "trained_from": "base", "train_samples": 0, "train_samples_designer": 0,
        "train_samples_agent": 0, "train_world_size": 1,
        "skipped": "no sample with a non-zero advantage", "checkpoint": None}
    assert WarmstartReport.skipped("off").to_summary() == {"warmstart_skipped": "off"}
    warm = RECORDS[3]
    assert "checkpoint" not in warm.to_summary() and warm.dump()["checkpoint"] == "/cache/ws"
    assert list(warm.to_summary()) == [
        "warmstart_pairs", "warmstart_programs", "warmstart_steps", "warmstart_losses",
        "warmstart_loss_first", "warmstart_loss_last", "warmstart_s", "warmstart_cached"]
    assert RECORDS[-2].to_summary() == {"eval.reasoning-gym": 0.5, "eval.reasoning-gym.n": 4}


def test_records_are_frozen():
    with pytest.raises(Exception, match="frozen"):
        SCORES.regret_mean = 1.0
