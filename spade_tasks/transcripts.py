"""Plain-text transcripts of recorded episodes (``spade episodes show ID``)."""

from __future__ import annotations

from spade_tasks.errors import UserError
from spade_tasks.store import Store, queries


def _pick_episode(store: Store, episode_id: str, run: str | None,
                  generation: int | None) -> dict:
    rows = queries.episodes_by_id(store, episode_id, run, generation)
    if not rows:
        narrowed = "".join(f" {k} {v}" for k, v in (("in run", run), ("generation", generation))
                           if v is not None)
        raise UserError(f"episode {episode_id!r} not found{narrowed}")
    runs = sorted({r["run"] for r in rows})
    if len(runs) > 1:
        raise UserError(f"episode {episode_id!r} exists in runs {', '.join(runs)}: name one")
    return rows[0]


def format_transcript(store: Store, episode_id: str, run: str | None = None,
                      generation: int | None = None) -> str:
    """The episode's observations, actions and rewards turn by turn, then its return.

    Episode ids repeat across generations (they are deterministic per generation), so
    without ``generation`` this shows the latest generation holding the id; an id found
    in several runs needs ``run``.
    """
    ep = _pick_episode(store, episode_id, run, generation)
    turns = queries.turns_of(store, ep["run"], ep["generation"], episode_id)
    title = f" - {ep['title']}" if ep.get("title") else ""
    lines = [f"episode {episode_id} (run {ep['run']}, generation {ep['generation']})",
             f"environment {ep['env_id']}{title}; seed {ep['seed']}; "
             f"{'with' if ep['with_hint'] else 'without'} hint"]
    for t in turns:
        lines += ["", f"[turn {t['turn'] + 1} observation]", t["observation"] or ""]
        if t["turn"] == 0 and ep["with_hint"]:
            lines += ["[hint]", ep["hint"] or ""]
        lines += [f"[turn {t['turn'] + 1} action, {t['n_tokens']} tokens]", t["action"] or "",
                  f"reward {t['reward']:g}"]
    if ep.get("final_observation"):
        lines += ["", "[final observation]", ep["final_observation"]]
    if ep.get("error"):
        lines += ["", f"[environment fault] {ep['error']}"]
    lines += ["", f"== return {ep['return']:g} in {ep['turns']} turns ({ep['end_reason']})"]
    return "\n".join(lines)


__all__ = ["format_transcript"]
