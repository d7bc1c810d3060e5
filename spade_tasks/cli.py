"""The ``spade`` command line (see DESIGN.md, "The command line").

User errors (a missing file, a broken config, an unknown name) end with one line on
stderr and exit code 2; no traceback reaches the user for them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from spade_tasks.errors import SpadeError, UserError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"spade: {message}\n")


def _existing_files(paths: list[str]) -> list[Path]:
    out = []
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise UserError(f"{p}: no such file")
        out.append(path)
    return out


def _sandbox(cfg):
    from spade_tasks.sandbox import Sandbox

    return Sandbox(cfg.sandbox)


def cmd_validate(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.validation import validate_path

    cfg = load_config(args.config)
    paths = _existing_files(args.paths)
    sandbox = _sandbox(cfg)
    all_ok = True
    for path in paths:
        report = validate_path(path, sandbox, cfg.validation, run_all=args.all,
                               allow_unverified=cfg.designer.allow_unverified_pool)
        all_ok &= report.accepted
        if args.json:
            print(json.dumps(report.to_json()), flush=True)
        else:
            verdict = "ACCEPTED" if report.accepted else "REJECTED"
            print(f"{verdict} {path} [{report.class_name or '?'}, sandbox tier {report.tier}]")
            if args.all:
                for c in report.checks:
                    print(f"  {c.status:4} {c.name:18} {c.seconds:6.2f} s  {c.detail}")
            else:
                for reason in report.reasons:
                    print(f"  - {reason}")
            sys.stdout.flush()
    return 0 if all_ok else 1


def cmd_import(args) -> int:
    import os
    import tempfile

    from spade_tasks.config import load_config
    from spade_tasks.interop import convert_file, output_path
    from spade_tasks.validation import validate_source

    cfg = load_config(args.config)
    paths = _existing_files(args.paths)
    into = Path(args.into)
    if into.exists() and not into.is_dir():
        raise UserError(f"{into}: not a directory")
    converted = [convert_file(p, args.format) for p in paths]  # every input parses first
    sandbox = _sandbox(cfg)
    into.mkdir(parents=True, exist_ok=True)
    all_ok, taken = True, set()
    for conv in converted:
        out = output_path(conv, into, taken)
        taken.add(out)
        # Imported programs go to a fixed pool: one without an oracle passes
        # oracle_missing here, feasibility-unverified; the pool uses it only with
        # `designer.allow_unverified_pool: true`.
        report = validate_source(conv.program, sandbox, cfg.validation, str(out),
                                 allow_unverified=True)
        all_ok &= report.accepted
        written = None
        if report.accepted:  # only programs that pass reach the folder (a pool reads it)
            fd, tmp = tempfile.mkstemp(dir=into, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(conv.program)
            os.replace(tmp, out)
            written = str(out)
        feasibility = ("verified" if report.meta and report.meta.has_oracle and report.accepted
                       else "unverified")
        row = report.to_json() | {"source": conv.source(), "written": written,
                                  "changes": conv.changes, "feasibility": feasibility}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            verdict = "IMPORTED" if report.accepted else "REJECTED"
            print(f"{verdict} {conv.path} -> {written or '(not written)'} "
                  f"[{report.class_name or '?'}, feasibility {feasibility}]")
            for line in conv.changes:
                print(f"  * {line}")
            for reason in report.reasons:
                print(f"  - {reason}")
            sys.stdout.flush()
    return 0 if all_ok else 1


def cmd_play(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.validation import env_class_name, oracle_policy, play

    cfg = load_config(args.config)
    (path,) = _existing_files([args.path])
    source = path.read_text(encoding="utf-8")
    class_name = env_class_name(source)
    if class_name is None:
        raise UserError(f"{path}: not an environment program (run `spade validate {path}`)")
    sandbox = _sandbox(cfg)
    with sandbox.open(source, class_name, {}) as ep:  # the program's own max_turns
        if not ep.load_result.ok:
            raise SpadeError(f"{path}: {ep.load_result.error}")
        max_turns = ep.meta.max_turns or 10
    if args.actions_file is not None:
        # One action per line, replayed in order; the episode ends when they run out.
        (actions_path,) = _existing_files([args.actions_file])
        actions = actions_path.read_text(encoding="utf-8").splitlines()
        replay = iter(actions)

        def policy(ep, obs):
            return next(replay, None)

        max_turns = min(max_turns, len(actions))
    elif args.policy == "oracle":
        policy = oracle_policy
    else:
        from spade_tasks.agent import model_policy

        policy = model_policy(cfg, hint=args.hint)
    p = play(sandbox, source, class_name, args.seed, policy, max_turns, with_hint=args.hint)
    if p.error:
        raise SpadeError(f"{path}: episode ended by a fault: {p.error}")
    if args.json:
        print(json.dumps({"path": str(path), "seed": args.seed, "return": p.ret,
                          "turns": p.turns, "terminated": p.terminated}))
        return 0
    who = f"actions from {args.actions_file}" if args.actions_file else f"policy {args.policy}"
    print(f"== {path} ({class_name}), seed {args.seed}, {who}")
    print(f"[observation]\n{p.observations[0]}")
    if p.hint is not None:
        print(f"[hint]\n{p.hint}")
    for i, (action, obs, reward) in enumerate(
            zip(p.actions, p.observations[1:], p.rewards), start=1):
        print(f"[turn {i}] action:\n{action}")
        print(f"[turn {i}] reward {reward:g}; observation:\n{obs}")
    end = "terminated" if p.terminated else "truncated" if p.truncated else "turn limit"
    print(f"== return {p.ret:g} in {p.turns} turns ({end})")
    return 0


def _open_store(run_dir: Path):
    import duckdb

    from spade_tasks.store import Store

    db = run_dir / "spade.duckdb"
    if not db.is_file():
        raise UserError(f"{db}: no such run database (run `spade run` first)")
    try:
        return Store(db)
    except duckdb.IOException as e:
        raise UserError(f"{db}: cannot open ({str(e).splitlines()[0]}); is a run in progress?")


def _run_dirs(cfg, run: str | None) -> list[Path]:
    root = cfg.run.root
    if run:
        return [root / run]
    return sorted(p.parent for p in root.glob("*/spade.duckdb"))


def cmd_envs_list(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.environments import seed_paths, title_of
    from spade_tasks.validation import env_class_name

    cfg = load_config(args.config)
    dirs = _run_dirs(cfg, args.run)
    if not dirs:
        print(f"no runs under {cfg.run.root}/; the seed environments:")
        for path in seed_paths():
            src = path.read_text(encoding="utf-8")
            print(f"  {path.stem:28} {env_class_name(src) or '?':24}")
        return 0
    for run_dir in dirs:
        with _open_store(run_dir) as store:
            rows = store.rows(
                "SELECT e.env_id, e.origin, e.generation, e.title, m.plays, m.regret,"
                " m.win_rate_no_hint, m.win_rate_hint, m.active FROM environments e"
                " LEFT JOIN memory m ON m.env_id = e.env_id AND m.run = ?"
                " WHERE e.run = ? OR e.origin = 'seed' ORDER BY e.origin DESC, e.generation, e.env_id",
                [run_dir.name, run_dir.name])
        print(f"run {run_dir.name}: {len(rows)} environments")
        print(f"  {'env_id':16} {'origin':8} {'gen':>3} {'plays':>5} {'regret':>7} "
              f"{'win':>5} {'win+h':>5}  title")
        for r in rows:
            def num(v, fmt):
                return format(v, fmt) if v is not None else "-"
            print(f"  {r['env_id']:16} {r['origin']:8} {num(r['generation'], '3d'):>3} "
                  f"{num(r['plays'], '5d'):>5} {num(r['regret'], '+7.3f'):>7} "
                  f"{num(r['win_rate_no_hint'], '5.2f'):>5} {num(r['win_rate_hint'], '5.2f'):>5}"
                  f"  {(r['title'] or '')[:60]}")
    return 0


def cmd_envs_show(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    for run_dir in _run_dirs(cfg, args.run):
        with _open_store(run_dir) as store:
            envs = store.rows("SELECT * FROM environments WHERE env_id LIKE ?",
                              [args.env_id + "%"])
            if len(envs) > 1:
                raise UserError(f"{args.env_id}: ambiguous, matches "
                                f"{', '.join(e['env_id'] for e in envs)}")
            if not envs:
                continue
            e = envs[0]
            print(f"== {e['env_id']} {e['class_name']} ({e['origin']}, run {run_dir.name}, "
                  f"generation {e['generation']})")
            print(f"file: {e['path']}")
            if e.get("feasibility_verified") is False:
                print("feasibility: unverified (no oracle; designer.allow_unverified_pool)")
            if e.get("flag"):
                print(f"flagged: {e['flag']}")
            vals = store.rows("SELECT generation, accepted, reasons, tier FROM validations"
                              " WHERE env_id = ?", [e["env_id"]])
            for v in vals:
                print(f"validation (gen {v['generation']}, tier {v['tier']}): "
                      f"{'accepted' if v['accepted'] else 'rejected'} {v['reasons'] or ''}")
            for m in store.rows("SELECT * FROM memory WHERE env_id = ?", [e["env_id"]]):
                print(f"memory: plays {m['plays']}, regret {m['regret']}, win rate "
                      f"{m['win_rate_no_hint']} (hint {m['win_rate_hint']}), active {m['active']}")
            for r in store.rows("SELECT * FROM regrets WHERE env_id = ? ORDER BY generation",
                                [e["env_id"]]):
                print(f"gen {r['generation']}: regret {r['regret']:+.3f}, win rate "
                      f"{r['win_rate_no_hint']:.2f} / hint {r['win_rate_hint']:.2f}, "
                      f"designer reward {r['designer_reward']}")
            eps = store.rows('SELECT episode_id, generation, seed, with_hint, "return", turns,'
                             " end_reason FROM episodes WHERE env_id = ? ORDER BY generation,"
                             " episode_id", [e["env_id"]])
            print(f"episodes: {len(eps)}")
            for ep in eps:
                print(f"  {ep['episode_id']} gen {ep['generation']} seed {ep['seed']} "
                      f"{'hint' if ep['with_hint'] else 'no hint'}: return {ep['return']:g} "
                      f"in {ep['turns']} turns ({ep['end_reason']})")
            print("---- source ----")
            print(e["source"])
            return 0
    raise UserError(f"{args.env_id}: no such environment in {cfg.run.root}/")


def _prefect_env() -> None:
    import os

    # This machine is offline: Prefect's telemetry would only log errors.
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _print_generation(summary: dict, run_name: str) -> None:
    g = summary["generation"]
    step = (f"loss {summary['loss']:.4f}" if "loss" in summary
            else f"no training step ({summary.get('skipped', 'no samples')})")
    print(f"generation {g} of run {run_name}: {summary['accepted']}/{summary['designs']} "
          f"designs accepted, {summary.get('environments_played', 0)} environments played, "
          f"mean regret {summary.get('regret_mean', 0.0):+.3f}, {step}, "
          f"{summary['wall_s']:.0f} s", flush=True)


def cmd_run(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)  # fail fast, before Prefect starts
    _prefect_env()
    from flows.generation import flow_for, prefect_api

    n = args.generations or cfg.run.generations
    run_name = args.run_name or cfg.run.name
    with prefect_api() as api_url:
        spade = flow_for(cfg, api_url)
        for _ in range(n):
            summary = spade(config=str(Path(args.config).resolve()), run_name=run_name)
            _print_generation(summary, run_name)
    root = cfg.run.root / run_name
    print(f"DuckDB: {root / 'spade.duckdb'}")
    print(f"checkpoint: {summary.get('checkpoint')}")
    print(f"MLflow: mlflow ui --backend-store-uri {cfg.tracking.mlflow_uri}")
    print(f"environments: spade envs list --run {run_name}")
    return 0


def cmd_serve(args) -> int:
    import os

    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    _prefect_env()
    if not os.environ.get("PREFECT_API_URL"):
        raise UserError("PREFECT_API_URL is not set: start `prefect server start` and "
                        "export PREFECT_API_URL=http://127.0.0.1:4200/api first")
    from flows.generation import flow_for

    print("serving flow 'spade' as deployment 'generation'; trigger it with "
          "`prefect deployment run spade/generation`", flush=True)
    flow_for(cfg).serve(name="generation",
                parameters={"config": str(Path(args.config).resolve()), "run_name": args.run_name})
    return 0


def cmd_design(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    _prefect_env()
    from spade_tasks.designer import run_design

    summary = run_design(cfg, n=args.n)
    if args.json:
        print(json.dumps(summary.to_json()))
        return 0
    print(f"run {summary.run}, generation {summary.generation}: {summary.accepted}/"
          f"{summary.designs} designs accepted in {summary.seconds:.0f} s")
    for check, n in sorted(summary.reasons.items()):
        print(f"  rejected by {check}: {n}")
    for env_id in summary.env_ids:
        print(f"  accepted: {env_id} (spade envs show {env_id})")
    return 0


def cmd_warmstart(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    from spade_tasks.warmstart import run_warmstart

    res = run_warmstart(cfg, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps(res))
        return 0
    where = "cached" if res["warmstart_cached"] else "trained"
    print(f"warm start ({where}): {res['warmstart_programs']} programs, "
          f"{res['warmstart_pairs']} pairs, {res['warmstart_steps']} steps, loss "
          f"{res['warmstart_loss_first']} -> {res['warmstart_loss_last']}, "
          f"{res['warmstart_s']:.0f} s")
    print(f"checkpoint: {res['checkpoint']}")
    return 0


def cmd_report(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    from spade_tasks import report

    obj, png = report.report(cfg, args.run)
    if args.json:
        print(json.dumps(obj))
    else:
        print(f"run {obj['run']}")
        print(report.table(obj["generations"]))
    print(f"curves: {png}", file=sys.stderr if args.json else sys.stdout)
    return 0


def cmd_eval(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    _prefect_env()
    from spade_tasks import evaluation

    if args.compare:
        a, b = args.compare
        with _open_store(evaluation.eval_store_path(cfg).parent) as store:
            rows = evaluation.compare(store, a, b)
        print(f"{'suite':18} {'n':>4} {a[:22]:>22} {b[:22]:>22} {'delta':>7}")
        for r in rows:
            print(f"{r['suite']:18} {r['n']:4d} {r['score_a']:22.3f} {r['score_b']:22.3f} "
                  f"{r['delta']:+7.3f}")
        path = evaluation.plot_compare(rows, a, b, cfg.run.root / f"compare-{a}-{b}.png")
        print(f"plot: {path}")
        return 0
    if not args.suite:
        raise UserError("eval needs --suite NAME (or --compare RUN_A RUN_B); suites: "
                        + ", ".join(evaluation.suite_names()))
    evaluation.get_suite(args.suite)  # an unknown name fails before the model loads
    if args.checkpoint and not Path(args.checkpoint).exists():
        raise UserError(f"{args.checkpoint}: no such checkpoint")
    res = evaluation.run_eval(cfg, args.suite, args.limit, args.checkpoint)
    print(f"{res.suite}: {res.score:.3f} over {res.n} items (evaluation run {res.run})")
    return 0


def cmd_episodes_show(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.transcripts import format_transcript

    cfg = load_config(args.config)
    dirs = _run_dirs(cfg, args.run)
    for run_dir in dirs:
        with _open_store(run_dir) as store:
            if store.count("episodes", episode_id=args.episode_id):
                print(format_transcript(store, args.episode_id, run_dir.name, args.generation))
                return 0
    raise UserError(f"{args.episode_id}: no such episode in {cfg.run.root}/")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="spade", description="Self-play RL in model-written environments.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser(
        "validate", help="check environment programs against the contract",
        description="Check environment programs against the contract (sandboxed). Exit "
        "codes: 0 all accepted, 1 any rejected, 2 usage error, 3 internal error.")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--json", action="store_true", help="one JSON object per program")
    v.add_argument("--all", action="store_true",
                   help="run every check instead of stopping at the first failure")
    v.add_argument("--config", default=None, help="YAML config (sandbox and validation)")
    v.set_defaults(fn=cmd_validate)

    im = sub.add_parser(
        "import", help="convert programs from another format, write them into DIR, validate",
        description="Convert environment programs written for the SPADE reference code "
        "(--format reference) or GEM text games (--format gem) into programs of our "
        "contract, validate each, and write the accepted ones into DIR. Exit codes: 0 all "
        "accepted, 1 any rejected, 2 usage error, 3 internal error.")
    im.add_argument("paths", nargs="+", metavar="PATH")
    im.add_argument("--format", required=True, choices=["reference", "gem"])
    im.add_argument("--into", required=True, metavar="DIR", help="folder for the converted programs")
    im.add_argument("--json", action="store_true", help="one JSON object per program")
    im.add_argument("--config", default=None, help="YAML config (sandbox and validation)")
    im.set_defaults(fn=cmd_import)

    p = sub.add_parser("play", help="play one episode of an environment program")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--policy", choices=["oracle"], default="oracle")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hint", action="store_true", help="show the privileged hint")
    p.add_argument("--actions-file", default=None, metavar="FILE",
                   help="replay these actions, one per line (instead of --policy)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--config", default=None)
    p.set_defaults(fn=cmd_play)

    r = sub.add_parser("run", help="run self-play generations (Prefect flow, in-process)")
    r.add_argument("--config", default="configs/cpu-tiny.yaml")
    r.add_argument("--generations", type=int, default=None)
    r.add_argument("--run-name", default=None)
    r.set_defaults(fn=cmd_run)

    sv = sub.add_parser("serve", help="serve the flow as deployment spade/generation")
    sv.add_argument("--config", default="configs/cpu-tiny.yaml")
    sv.add_argument("--run-name", default=None)
    sv.set_defaults(fn=cmd_serve)

    d = sub.add_parser("design", help="write, validate and record designs (no rollouts)")
    d.add_argument("--config", default="configs/cpu-tiny.yaml")
    d.add_argument("--n", type=int, default=None, help="designs (default: the config's)")
    d.add_argument("--json", action="store_true")
    d.set_defaults(fn=cmd_design)

    w = sub.add_parser("warmstart", help="the designer's warm start alone (cached by content)")
    w.add_argument("--config", default="configs/cpu-tiny.yaml")
    w.add_argument("--json", action="store_true")
    w.set_defaults(fn=cmd_warmstart)

    rp = sub.add_parser("report", help="one row per generation: validity, rewards, win rates")
    rp.add_argument("--config", default="configs/cpu-tiny.yaml")
    rp.add_argument("--run", default=None, help="run name (default: the config's)")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(fn=cmd_report)

    ev = sub.add_parser("eval", help="evaluate on a held-out suite, offline")
    ev.add_argument("--suite", default=None)
    ev.add_argument("--limit", type=int, default=None)
    ev.add_argument("--checkpoint", default=None)
    ev.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), default=None)
    ev.add_argument("--config", default="configs/cpu-tiny.yaml")
    ev.set_defaults(fn=cmd_eval)

    e = sub.add_parser("envs", help="browse the environment store")
    esub = e.add_subparsers(dest="envs_command", required=True, parser_class=_Parser)
    el = esub.add_parser("list", help="environments of a run (or of every run)")
    el.add_argument("--run", default=None)
    el.add_argument("--config", default=None)
    el.set_defaults(fn=cmd_envs_list)
    es = esub.add_parser("show", help="one environment: code, validation, statistics, episodes")
    es.add_argument("env_id", metavar="ENV_ID")
    es.add_argument("--run", default=None)
    es.add_argument("--config", default=None)
    es.set_defaults(fn=cmd_envs_show)

    ep = sub.add_parser("episodes", help="episode transcripts")
    epsub = ep.add_subparsers(dest="episodes_command", required=True, parser_class=_Parser)
    eps = epsub.add_parser("show", help="one episode's transcript")
    eps.add_argument("episode_id", metavar="EPISODE_ID")
    eps.add_argument("--run", default=None)
    eps.add_argument("--generation", type=int, default=None)
    eps.add_argument("--config", default=None)
    eps.set_defaults(fn=cmd_episodes_show)
    return ap


INTERNAL_ERROR = 3
"""Exit code of `spade validate`/`spade import` when the checker itself fails (no
sandbox, a bug): distinct from 1, which says a program was rejected."""
CHECKING_COMMANDS = ("validate", "import")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in CHECKING_COMMANDS:
        try:
            return _main(args)
        except Exception as e:  # a checker fault must not read as "rejected" (exit 1)
            print(f"spade: internal error: {type(e).__name__}: {e}", file=sys.stderr)
            return INTERNAL_ERROR
    return _main(args)


def _main(args) -> int:
    try:
        return args.fn(args)
    except UserError as e:
        print(f"spade: error: {e}", file=sys.stderr)
        return e.exit_code
    except SpadeError as e:
        print(f"spade: error: {e}", file=sys.stderr)
        return INTERNAL_ERROR if args.command in CHECKING_COMMANDS else e.exit_code
    except KeyboardInterrupt:
        print("spade: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
