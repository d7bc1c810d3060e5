"""``spade report``: one row per generation of a run, read from its DuckDB, and curves.

The numbers are the learning signal's: how many designs were accepted as new
environments, why the others were refused, what the designer earned, how many samples
of each role the training step learned from, and how the agent did with and without
the hint. ``accepted`` counts accepted designs that are not duplicates: a design the
validator accepted but whose program is a copy (a ``duplicate`` reason, or a program the
memory refused as a near-duplicate or already held) does not count. The memory judges
a generation's designs in its last stage, so in a generation still running (or stopped
before that stage) the designs the validator accepted are counted as ``unjudged``, in
neither ``accepted`` nor ``rejections``.

With ``designer.revisions``, a rejected design is written again (``to_revise``); a
design is then its first draft and its revisions: ``designs`` counts first drafts,
``accepted`` the designs accepted as new at any draft, and ``rejections`` the last
draft's reason. ``revisions`` and ``revisions_accepted`` say how many drafts were
rewritten and how many of the accepted came from a rewrite.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from spade_tasks.errors import UserError
from spade_tasks.regret import check_name, names_duplicate
from spade_tasks.store import Store, queries

FIELDS = ("generation", "designs", "accepted", "validity_rate", "rejections",
          "designer_reward_mean", "designer_samples_trained", "agent_samples_trained",
          "win_rate_no_hint", "win_rate_hint", "regret_mean", "train_world_size",
          "rollout_workers", "variants", "variants_accepted", "revisions",
          "revisions_accepted", "unjudged")


def _is_new(d: dict, new_in_memory: set[tuple[int, str]]) -> bool:
    """An accepted design the memory took in as new in its generation, with no
    duplicate reason."""
    if not d["accepted"] or names_duplicate(d["reasons"]):
        return False
    return (d["generation"], d["env_id"]) in new_in_memory


def new_by_generation(store: Store, run: str) -> dict[int, list[str]]:
    """The env_ids each generation accepted as new (what ``accepted`` counts), in order."""
    new_in_memory = {(r["added_generation"], r["env_id"])
                     for r in queries.memory_additions(store, run)}
    out: dict[int, list[str]] = {}
    for d in queries.run_designs(store, run):
        if _is_new(d, new_in_memory) and d["env_id"] not in out.get(d["generation"], []):
            out.setdefault(d["generation"], []).append(d["env_id"])
    return out


def recheck(store: Store, run: str, rows: list[dict], sandbox, cfg) -> list[dict]:
    """``rows`` with each generation's designs accepted as new validated again under
    today's checks: ``accepted_now`` (how many still pass) and ``refused_now`` (the
    others, by the check that refuses them). A check added after a run (a way to game
    the designer's reward closed) is then counted on the run's own designs. Of the
    duplicate rule, what a quiz computes (``same_answers_reason``) is judged again
    against the pool as it stood: the committed programs and the designs the run
    accepted as new before it; its text rules, which judged the whole memory of the
    day, are not."""
    from spade_tasks.designer import (RECORD_COLUMNS, committed_programs,
                                      same_answers_reason)
    from spade_tasks.environments import EnvRecord
    from spade_tasks.validation import validate_source

    new = new_by_generation(store, run)
    records = {r["env_id"]: EnvRecord(**r) for r in queries.environments_by_id(
        store, [e for ids in new.values() for e in ids], RECORD_COLUMNS)}
    known = committed_programs()
    out = []
    for row in rows:
        refused: Counter = Counter()
        for env_id in new.get(row["generation"], []):
            rec = records[env_id]
            report = validate_source(rec.source, sandbox, cfg, env_id)
            if not report.accepted:
                refused[check_name(report.reasons[0])] += 1
            elif same_answers_reason(rec, known, sandbox):
                refused["duplicate"] += 1
            known.append(rec)
        out.append(row | {"accepted_now": row["accepted"] - sum(refused.values()),
                          "refused_now": dict(sorted(refused.items()))})
    return out


def generation_rows(store: Store, run: str) -> list[dict]:
    """The report's rows, one per generation with any recorded stage, in order."""
    gens = queries.recorded_generations(store, run)
    designs = queries.run_designs(store, run)
    new_in_memory = {(r["added_generation"], r["env_id"])
                     for r in queries.memory_additions(store, run)}
    judged = queries.generations_with_stage(store, run, "update_memory")
    regrets = {r["generation"]: r for r in queries.regret_means_by_generation(store, run)}
    trained = {r["generation"]: r["metrics"] for r in queries.train_step_metrics(store, run)}
    gen_metrics = {r["generation"]: r["metrics"]
                   for r in queries.generation_metrics_rows(store, run)}
    out = []
    for g in gens:
        drafts = [d for d in designs if d["generation"] == g]
        ds = [d for d in drafts if d["revises"] is None]  # first drafts: one per design
        revised = {d["revises"] for d in drafts if d["revises"] is not None}
        new = {d["env_id"] for d in drafts if _is_new(d, new_in_memory)}
        rejections: Counter = Counter()
        unjudged = 0
        for d in drafts:
            if d["design_idx"] in revised:  # its revision's outcome is the design's
                continue
            if not d["accepted"]:
                reasons = d["reasons"] or []
                rejections[check_name(reasons[0]) if reasons else "unknown"] += 1
            elif g not in judged and not names_duplicate(d["reasons"]):
                unjudged += 1  # not yet a copy: the memory has not seen it
            elif not _is_new(d, new_in_memory):
                rejections["duplicate"] += 1
        rewards = [d["reward"] for d in drafts if d["reward"] is not None]
        reg = regrets.get(g) or {}
        t = trained.get(g) or {}
        m = gen_metrics.get(g) or {}
        out.append({
            "generation": g,
            "designs": len(ds),
            "accepted": len(new),
            "validity_rate": len(new) / len(ds) if ds else 0.0,
            "rejections": dict(sorted(rejections.items())),
            "designer_reward_mean": sum(rewards) / len(rewards) if rewards else None,
            "designer_samples_trained": t.get("train_samples_designer"),
            "agent_samples_trained": t.get("train_samples_agent"),
            "win_rate_no_hint": reg.get("w"),
            "win_rate_hint": reg.get("wh"),
            "regret_mean": reg.get("regret"),
            "train_world_size": m.get("train_world_size"),
            "rollout_workers": m.get("rollout_workers"),
            # designer.variants: designs grown from a memory program, and those accepted as new
            "variants": sum(d["parent_env_id"] is not None for d in ds),
            "variants_accepted": sum(d["parent_env_id"] is not None and _is_new(d, new_in_memory)
                                     for d in ds),
            "revisions": len(drafts) - len(ds),
            "revisions_accepted": sum(d["revises"] is not None and _is_new(d, new_in_memory)
                                      for d in drafts),
            "unjudged": unjudged,
        })
    return out


def open_readable(db: Path, tmp: Path) -> Store:
    """The run's store for reading; while a run holds the file (DuckDB allows one
    process), a copy of it taken now."""
    import duckdb

    if not db.is_file():
        raise UserError(f"{db}: no such run store (check --run and the config's run.root)")
    try:
        return Store(db)
    except duckdb.IOException:
        copy = tmp / db.name
        shutil.copy2(db, copy)
        wal = db.with_name(db.name + ".wal")
        if wal.is_file():
            shutil.copy2(wal, copy.with_name(copy.name + ".wal"))
        return Store(copy)


def plot(rows: list[dict], path: Path, title: str) -> Path:
    """The curves of ``rows`` as one PNG: validity, designer reward, win rates and
    regret, and the samples each role trained on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["generation"] for r in rows]
    panels = [("validity rate (accepted, new)", ["validity_rate"]),
              ("designer reward (mean)", ["designer_reward_mean"]),
              ("agent", ["win_rate_no_hint", "win_rate_hint", "regret_mean"]),
              ("samples trained", ["designer_samples_trained", "agent_samples_trained"])]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2))
    for ax, (label, keys) in zip(axes, panels):
        for key in keys:
            pts = [(x, r[key]) for x, r in zip(xs, rows) if r[key] is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=key)
        ax.set_xlabel("generation")
        ax.set_title(label, fontsize=9)
        if len(keys) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def table(rows: list[dict]) -> str:
    """The rows as a plain-text table."""
    head = (f"{'gen':>3} {'designs':>7} {'accepted':>8} {'valid':>6} {'d.reward':>8} "
            f"{'d.samp':>6} {'a.samp':>6} {'win':>5} {'win+h':>5} {'regret':>7}  rejections")
    lines = [head]
    for r in rows:
        rej = ", ".join(f"{k} {v}" for k, v in r["rejections"].items()) or "-"
        lines.append(
            f"{r['generation']:>3} {r['designs']:>7} {r['accepted']:>8} "
            f"{r['validity_rate']:>6.2f} {_fmt(r['designer_reward_mean'], '>8.3f')} "
            f"{_fmt(r['designer_samples_trained'], '>6')} {_fmt(r['agent_samples_trained'], '>6')} "
            f"{_fmt(r['win_rate_no_hint'], '>5.2f')} {_fmt(r['win_rate_hint'], '>5.2f')} "
            f"{_fmt(r['regret_mean'], '>+7.3f')}  {rej}"
            + (f"; {r['unjudged']} awaiting the memory update" if r["unjudged"] else "")
            + (f"; revised {r['revisions']}, {r['revisions_accepted']} accepted"
               if r["revisions"] else "")
            + (f"; {r['accepted_now']} accepted under today's checks"
               + "".join(f", {k} {v}" for k, v in r["refused_now"].items())
               if "accepted_now" in r else ""))
    return "\n".join(lines)


def report(cfg, run: str | None = None, png: Path | None = None,
           mlflow: bool = True, again: bool = False) -> tuple[dict, Path]:
    """The report of ``run`` (default: the config's) as the JSON object ``spade report
    --json`` prints, and where its curves were written as a PNG (also logged to the
    run's MLflow run when it has one). ``again``: ``recheck`` the designs accepted as
    new in the config's sandbox."""
    run = run or cfg.run.name
    db = cfg.run.root / run / "spade.duckdb"
    with tempfile.TemporaryDirectory() as tmp:
        store = open_readable(db, Path(tmp))
        try:
            rows = generation_rows(store, run)
            if again:
                from spade_tasks.sandbox import Sandbox

                rows = recheck(store, run, rows, Sandbox(cfg.sandbox), cfg.validation)
            parent = queries.run_mlflow_id(store, run)
        finally:
            store.close()
    png = plot(rows, png or cfg.run.root / run / "report.png", f"SPADE run {run}")
    if mlflow and parent:
        from mlflow.exceptions import MlflowException

        from spade_tasks.tracking import _client

        try:
            _client(cfg.tracking.mlflow_uri).log_artifact(parent, str(png), "report")
        except MlflowException as e:
            # A run read from another store (a copied run folder, another --root): the
            # report is still good; only the upload has nowhere to go.
            if e.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
            print(f"spade report: MLflow run {parent} of {run} is not in "
                  f"{cfg.tracking.mlflow_uri}; the curves were not logged there",
                  file=sys.stderr)
    return {"run": run, "generations": rows}, png


__all__ = ["FIELDS", "generation_rows", "new_by_generation", "recheck", "plot", "table", "report",
           "open_readable"]
