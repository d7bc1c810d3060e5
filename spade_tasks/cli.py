"""The ``spade`` command line (see docs/design.md, "The command line").

User errors (a missing file, a broken config, an unknown name) end with one line on
stderr and exit code 2; no traceback reaches the user for them.

Each command is a ``cmd_*`` function plus one ``_add_*`` function that declares its
parser (help text on every option, an example in the epilog); ``build_parser`` calls
the ``_add_*`` functions in ``COMMANDS`` order, so a new command is two functions and
one line there. Paths: see ``spade_tasks.config`` (``--root`` sets ``$SPADE_ROOT``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
from importlib import metadata
from pathlib import Path

from spade_tasks.config import REPO_ROOT, ROOT_ENV
from spade_tasks.errors import SpadeError, UserError

DEFAULT_CONFIG = REPO_ROOT / "configs" / "cpu-tiny.yaml"


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows each option's default (unless None or a flag's False) and keeps the
    epilog's line breaks (the examples)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        if kwargs.get("description"):  # the raw formatter keeps it as given: wrap it here
            kwargs["description"] = textwrap.fill(kwargs["description"], 80)
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse's own usage errors: one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (got {value})")
    return value


def _add_config(p, default: Path | None = DEFAULT_CONFIG, what: str = "run config") -> None:
    p.add_argument("--config", default=default, metavar="YAML",
                   help=f"YAML {what}; its relative paths resolve against its own folder"
                   + ("" if default else " (default: the built-in defaults)"))


def _add_root(p) -> None:
    p.add_argument("--root", default=None, metavar="DIR",
                   help=f"base folder of run state: run.root and a relative sqlite MLflow "
                   f"store resolve against it (sets ${ROOT_ENV}; default: ${ROOT_ENV} "
                   "when set, else the project)")


def _add_run(p) -> None:
    p.add_argument("--run", default=None, metavar="NAME",
                   help="self-play run to look in (default: every run under the run root)")


def _sandbox(cfg):
    from spade_tasks.sandbox import Sandbox

    return Sandbox(cfg.sandbox)


# -- validate ---------------------------------------------------------------------------


def cmd_validate(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.environments import program_paths, read_program
    from spade_tasks.validation import validate_source

    cfg = load_config(args.config)
    paths = program_paths(args.paths)
    sources = [read_program(p) for p in paths]  # every unreadable file fails before any run
    sandbox = _sandbox(cfg)
    all_ok = True
    for path, source in zip(paths, sources):
        report = validate_source(source, sandbox, cfg.validation, str(path),
                                 allow_unverified=cfg.designer.allow_unverified_pool,
                                 run_all=args.all)
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
    from spade_tasks.environments import program_paths, read_program
    from spade_tasks.interop import convert_file, output_path
    from spade_tasks.validation import validate_source

    cfg = load_config(args.config)
    paths = program_paths(args.paths)
    for p in paths:  # size and encoding, named, before any conversion
        read_program(p)
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


def _add_validate(sub) -> None:
    v = sub.add_parser(
        "validate", help="check environment programs against the contract",
        description="Run the validator's named checks on each program, in the sandbox. "
        "Exit codes: 0 all accepted, 1 any rejected, 2 usage error, 3 internal error.",
        epilog="examples:\n  spade validate environments_store/seeds/water_jugs.py\n"
        "  spade validate environments_store/seeds --json\n"
        "  spade validate environments_store/seeds/water_jugs.py --all")
    v.add_argument("paths", nargs="+", metavar="PATH",
                   help="program files, or folders standing for the .py files in them")
    v.add_argument("--json", action="store_true",
                   help="print one JSON object per program: path, accepted, reasons")
    v.add_argument("--all", action="store_true",
                   help="run every check instead of stopping at the first failure, and "
                   "print each check's status (pass, fail or skip)")
    _add_config(v, None, "config (its sandbox and validation sections)")
    v.set_defaults(fn=cmd_validate)


def _add_import(sub) -> None:
    im = sub.add_parser(
        "import", help="convert programs from another format, write them into DIR, validate",
        description="Convert environment programs written for the SPADE reference code "
        "(--format reference) or GEM text games (--format gem) into programs of our "
        "contract, validate each, and write the accepted ones into DIR. Exit codes: 0 all "
        "accepted, 1 any rejected, 2 usage error, 3 internal error.",
        epilog="example:\n  spade import --format reference ref_envs/*.py --into my_pool --json")
    im.add_argument("paths", nargs="+", metavar="PATH",
                    help="programs to convert, or folders standing for the .py files in them")
    im.add_argument("--format", required=True, choices=["reference", "gem"],
                    help="what the programs are written for: the SPADE reference code, or "
                    "GEM text games (required, no default)")
    im.add_argument("--into", required=True, metavar="DIR",
                    help="folder for the converted programs (required, no default)")
    im.add_argument("--json", action="store_true",
                    help="print one JSON object per program: the validator's fields plus "
                    "source, written, changes, feasibility")
    _add_config(im, None, "config (its sandbox and validation sections)")
    im.set_defaults(fn=cmd_import)


# -- play -------------------------------------------------------------------------------


def cmd_play(args) -> int:
    from spade_tasks import play
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    if args.actions_file is not None and not Path(args.actions_file).is_file():
        raise UserError(f"{args.actions_file}: no such file")
    if args.checkpoint and args.policy != "model":
        raise UserError(f"--checkpoint {args.checkpoint}: only --policy model plays a checkpoint")
    if args.checkpoint and not Path(args.checkpoint).exists():
        raise UserError(f"{args.checkpoint}: no such checkpoint")
    sandbox = _sandbox(cfg)
    prog = play.load_program(args.path, sandbox)
    if args.actions_file is not None:
        t = play.play_actions(sandbox, prog, args.seed, args.hint,
                              play.read_actions(args.actions_file))
    elif args.policy == "oracle":
        t = play.play_oracle(sandbox, prog, args.seed, args.hint)
    elif args.policy == "human":
        say = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else \
            (lambda s: print(s, flush=True))
        t = play.play_human(sandbox, prog, args.seed, args.hint, say=say)
    else:
        from spade_tasks.llm.base import SamplingParams, make_backend

        if args.hint and not prog.meta.has_hint:  # before minutes of model loading
            raise UserError(f"{prog.path}: {prog.meta.class_name} defines no hint(); "
                            "play it without --hint")
        model_cfg = cfg.model if not args.checkpoint else \
            cfg.model.model_copy(update={"name": str(Path(args.checkpoint).resolve())})
        with make_backend(model_cfg) as backend:
            t = play.play_model(backend, sandbox, prog, args.seed, args.hint, cfg.rollout,
                                SamplingParams.from_config(model_cfg))
    if args.json:
        print(json.dumps(t.to_json()))
    elif args.policy == "human":
        print(f"== return {t.ret:g} in {t.turns} turns ({t.end_reason})")
    else:
        print(play.format_transcript(t))
    if t.error and t.end_reason != "quit":
        print(f"spade: error: {prog.path}: episode ended by a fault: {t.error}", file=sys.stderr)
        return 1
    return 0


def _add_play(sub) -> None:
    p = sub.add_parser(
        "play", help="play one episode of an environment program",
        description="Play one episode in the sandbox and print its transcript. The policy "
        "is the program's oracle, the model (the config's, or --checkpoint) as a rollout "
        "plays it, or you at the terminal.",
        epilog="examples:\n  spade play environments_store/seeds/water_jugs.py --seed 3 --hint\n"
        "  spade play environments_store/seeds/water_jugs.py --policy human\n"
        "  spade play environments_store/seeds/water_jugs.py --actions-file moves.txt --json\n"
        "  spade play environments_store/seeds/water_jugs.py --policy model "
        "--checkpoint runs/cpu-tiny/checkpoints/gen-0000 --json")
    p.add_argument("path", metavar="PATH", help="the environment program (a .py file)")
    p.add_argument("--policy", choices=("oracle", "model", "human"), default="oracle",
                   help="who acts: the program's oracle, the model, or you (one line per "
                   "action, Ctrl-D quits)")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="with --policy model: a Hugging Face-format checkpoint folder "
                   "(default: the config's model.name)")
    p.add_argument("--actions-file", default=None, metavar="FILE",
                   help="replay these actions, one per line, instead of --policy; the "
                   "episode ends when they run out (default: play --policy)")
    p.add_argument("--seed", type=int, default=0, help="environment seed of the episode")
    p.add_argument("--hint", action="store_true",
                   help="play with the program's privileged hint (shown after the first "
                   "observation)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: path, seed, return, turns, terminated, "
                   "truncated, end_reason, actions, rewards, observations, hint")
    _add_config(p, None, "config (sandbox, model and rollout sections)")
    p.set_defaults(fn=cmd_play)


# -- browsing a run's data ------------------------------------------------------------


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
        if not (root / run / "spade.duckdb").is_file():
            known = ", ".join(p.parent.name for p in sorted(root.glob("*/spade.duckdb")))
            raise UserError(f"--run {run}: no such run under {root} (runs: {known or 'none'})")
        return [root / run]
    return sorted(p.parent for p in root.glob("*/spade.duckdb"))


def _num(v, fmt: str) -> str:
    return format(v, fmt) if v is not None else "-"


def _env_name(row: dict) -> str:
    """What ``envs list`` prints as NAME and ``envs show`` accepts: the file's stem for
    a seed, the class name otherwise."""
    if row.get("origin") == "seed" and row.get("path"):
        return Path(row["path"]).stem
    return row.get("class_name") or "?"


def cmd_envs_list(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.store import queries
    from spade_tasks.environments import seed_paths
    from spade_tasks.validation import env_class_name

    cfg = load_config(args.config)
    dirs = _run_dirs(cfg, args.run)
    if not dirs:
        print(f"no runs under {cfg.run.root}; the seed environments (NAME, class):")
        for path in seed_paths():
            src = path.read_text(encoding="utf-8")
            print(f"  {path.stem:28} {env_class_name(src) or '?':24}")
        return 0
    for run_dir in dirs:
        with _open_store(run_dir) as store:
            rows = queries.environments_with_memory(store, run_dir.name)
            rejected = queries.rejected_design_count(store, run_dir.name)
        print(f"run {run_dir.name}: {len(rows)} environments")
        print(f"  {'env_id':16} {'name':24} {'origin':8} {'gen':>3} {'plays':>5} {'regret':>7} "
              f"{'win':>5} {'win+h':>5}  title")
        for r in rows:
            print(f"  {r['env_id']:16} {_env_name(r)[:24]:24} {r['origin']:8} "
                  f"{_num(r['generation'], '3d'):>3} "
                  f"{_num(r['plays'], '5d'):>5} {_num(r['regret'], '+7.3f'):>7} "
                  f"{_num(r['win_rate_no_hint'], '5.2f'):>5} {_num(r['win_rate_hint'], '5.2f'):>5}"
                  f"  {(r['title'] or '')[:60]}")
        if rejected:
            print(f"  ({rejected} rejected designs: spade designs list --run {run_dir.name} "
                  "--rejected)")
    return 0


def _match_envs(rows: list[dict], key: str) -> list[dict]:
    """Rows whose env_id starts with ``key``, or whose name or class name is ``key``."""
    k = key.lower()
    by_id = [r for r in rows if r["env_id"].startswith(k)]
    if by_id:
        return by_id
    return [r for r in rows if k in (_env_name(r).lower(), (r["class_name"] or "").lower())]


def _show_seed(key: str) -> bool:
    """``envs show`` before any run: a seed program by name or class name."""
    from spade_tasks.environments import seed_paths
    from spade_tasks.validation import env_class_name

    for path in seed_paths():
        src = path.read_text(encoding="utf-8")
        if key.lower() in (path.stem.lower(), (env_class_name(src) or "").lower()):
            print(f"== {path.stem} {env_class_name(src)} (seed, not played in any run yet)")
            print(f"file: {path}")
            print("---- source ----")
            print(src)
            return True
    return False


def cmd_envs_show(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.store import queries

    cfg = load_config(args.config)
    for run_dir in _run_dirs(cfg, args.run):
        with _open_store(run_dir) as store:
            envs = _match_envs(queries.all_environments(store), args.env)
            if len(envs) > 1:
                raise UserError(f"{args.env}: ambiguous, matches "
                                f"{', '.join(e['env_id'] for e in envs)}")
            if not envs:
                continue
            e = envs[0]
            print(f"== {e['env_id']} {_env_name(e)} {e['class_name']} ({e['origin']}, run "
                  f"{run_dir.name}, generation {e['generation']})")
            print(f"file: {e['path']}")
            if e.get("feasibility_verified") is False:
                print("feasibility: unverified (no oracle; designer.allow_unverified_pool)")
            if e.get("flag"):
                print(f"flagged: {e['flag']}")
            for v in queries.validations_of_env(store, e["env_id"]):
                print(f"validation (gen {v['generation']}, tier {v['tier']}): "
                      f"{'accepted' if v['accepted'] else 'rejected'} {v['reasons'] or ''}")
            for m in queries.memory_of_env(store, e["env_id"]):
                print(f"memory: plays {m['plays']}, regret {m['regret']}, win rate "
                      f"{m['win_rate_no_hint']} (hint {m['win_rate_hint']}), active {m['active']}")
            for r in queries.regrets_of_env(store, e["env_id"]):
                print(f"gen {r['generation']}: regret {r['regret']:+.3f}, win rate "
                      f"{r['win_rate_no_hint']:.2f} / hint {r['win_rate_hint']:.2f}, "
                      f"designer reward {r['designer_reward']}")
            eps = queries.episodes_of_env(store, e["env_id"])
            print(f"episodes: {len(eps)}")
            for ep in eps:
                print(f"  {ep['episode_id']} gen {ep['generation']} seed {ep['seed']} "
                      f"{'hint' if ep['with_hint'] else 'no hint'}: return {ep['return']:g} "
                      f"in {ep['turns']} turns ({ep['end_reason']})")
            print("---- source ----")
            print(e["source"])
            return 0
    if not args.run and _show_seed(args.env):
        return 0
    raise UserError(f"{args.env}: no environment with this id or name under {cfg.run.root}")


def _add_envs(sub) -> None:
    e = sub.add_parser(
        "envs", help="browse the environments of the runs",
        description="List the environments of the runs (seeds and accepted designs) or "
        "show one: its code, validation, statistics and episodes.",
        epilog="examples:\n  spade envs list --run cpu-tiny\n  spade envs show water_jugs\n"
        "  spade envs show 3f2a9c")
    esub = e.add_subparsers(dest="envs_command", metavar="COMMAND", parser_class=_Parser)
    el = esub.add_parser("list", help="environments of a run (or of every run)",
                         description="One row per environment: id, name, origin, generation, "
                         "plays, regret and win rates without and with the hint.",
                         epilog="example:\n  spade envs list --run cpu-tiny")
    _add_run(el)
    _add_config(el, None)
    _add_root(el)
    el.set_defaults(fn=cmd_envs_list)
    es = esub.add_parser("show", help="one environment: code, validation, statistics, episodes",
                         description="Show one environment, found by its id (or a prefix of "
                         "it) or by the NAME `spade envs list` prints (a seed's file name, "
                         "else the class name).",
                         epilog="examples:\n  spade envs show water_jugs\n"
                         "  spade envs show 3f2a9c --run cpu-tiny")
    es.add_argument("env", metavar="ENV", help="environment id, id prefix, or name")
    _add_run(es)
    _add_config(es, None)
    _add_root(es)
    es.set_defaults(fn=cmd_envs_show)
    e.set_defaults(fn=lambda args: _usage(e))


def _design_id(r: dict) -> str:
    return f"{r['generation']}-{r['design_idx']}"


def cmd_designs_list(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.store import queries

    cfg = load_config(args.config)
    dirs = _run_dirs(cfg, args.run)
    if not dirs:
        print(f"no runs under {cfg.run.root}")
        return 0
    for run_dir in dirs:
        with _open_store(run_dir) as store:
            rows = queries.run_designs(store, run_dir.name, rejected_only=args.rejected)
        print(f"run {run_dir.name}: {len(rows)} {'rejected ' if args.rejected else ''}designs")
        print(f"  {'id':7} {'verdict':8} {'env_id':16} {'reward':>7}  reason")
        for r in rows:
            reason = (r["reasons"] or [""])[0].replace("\n", " ")
            print(f"  {_design_id(r):7} {'accepted' if r['accepted'] else 'rejected':8} "
                  f"{r['env_id'] or '-':16} {_num(r['reward'], '+7.3f'):>7}  {reason[:90]}")
    return 0


def cmd_designs_show(args) -> int:
    from spade_tasks.config import load_config
    from spade_tasks.store import queries

    cfg = load_config(args.config)
    try:
        gen, idx = (int(x) for x in args.design.split("-"))
    except ValueError:
        raise UserError(f"{args.design}: a design id is GENERATION-INDEX, e.g. 0-2 "
                        "(see `spade designs list`)") from None
    for run_dir in _run_dirs(cfg, args.run):
        with _open_store(run_dir) as store:
            d = queries.design(store, run_dir.name, gen, idx)
            if d is None:
                continue
            doc = queries.document(store, run_dir.name, gen, d["doc_id"])
        print(f"== design {args.design} of run {run_dir.name}: "
              f"{'accepted' if d['accepted'] else 'rejected'}"
              + (f" as {d['env_id']}" if d["env_id"] else "")
              + f", reward {_num(d['reward'], '+.3f')}")
        for reason in d["reasons"] or []:
            print(f"  - {reason}")
        if doc:
            text = " ".join((doc["text"] or "").split())
            print(f"document ({doc['source']}): {text[:300]}{'...' if len(text) > 300 else ''}")
        print(f"---- completion ({len(d['token_ids'] or [])} tokens) ----")
        print(d["completion"] or "")
        return 0
    raise UserError(f"{args.design}: no such design under {cfg.run.root}"
                    + (f" in run {args.run}" if args.run else ""))


def _add_designs(sub) -> None:
    d = sub.add_parser(
        "designs", help="browse the designer's programs, rejected ones with their reasons",
        description="Every program the designer wrote, accepted or not: the verdict, the "
        "validator's reasons and the designer's reward.",
        epilog="examples:\n  spade designs list --run cpu-tiny --rejected\n"
        "  spade designs show 0-2 --run cpu-tiny")
    dsub = d.add_subparsers(dest="designs_command", metavar="COMMAND", parser_class=_Parser)
    dl = dsub.add_parser("list", help="designs of a run (or of every run)",
                         description="One row per design: id (GENERATION-INDEX), verdict, "
                         "environment id when accepted, reward, first reason.",
                         epilog="example:\n  spade designs list --rejected")
    dl.add_argument("--rejected", action="store_true", help="only the rejected designs")
    _add_run(dl)
    _add_config(dl, None)
    _add_root(dl)
    dl.set_defaults(fn=cmd_designs_list)
    ds = dsub.add_parser("show", help="one design: verdict, reasons, document, completion",
                         description="Show one design by its id GENERATION-INDEX.",
                         epilog="example:\n  spade designs show 0-2 --run cpu-tiny")
    ds.add_argument("design", metavar="ID", help="design id GENERATION-INDEX, e.g. 0-2")
    _add_run(ds)
    _add_config(ds, None)
    _add_root(ds)
    ds.set_defaults(fn=cmd_designs_show)
    d.set_defaults(fn=lambda args: _usage(d))


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
    raise UserError(f"{args.episode_id}: no such episode under {cfg.run.root}")


def _add_episodes(sub) -> None:
    ep = sub.add_parser("episodes", help="episode transcripts",
                        description="Show a recorded episode turn by turn.",
                        epilog="example:\n"
                        "  spade episodes show 3f2a9c0d1e2b4a5c-n-0 --run cpu-tiny")
    epsub = ep.add_subparsers(dest="episodes_command", metavar="COMMAND", parser_class=_Parser)
    eps = epsub.add_parser("show", help="one episode's transcript",
                           description="Observations, actions and rewards of one episode "
                           "(ids are listed by `spade envs show`).",
                           epilog="example:\n  spade episodes show 3f2a9c0d1e2b4a5c-n-0")
    eps.add_argument("episode_id", metavar="EPISODE_ID",
                     help="episode id, as `spade envs show` lists it")
    _add_run(eps)
    eps.add_argument("--generation", type=int, default=None,
                     help="generation holding the episode (default: the latest)")
    _add_config(eps, None)
    _add_root(eps)
    eps.set_defaults(fn=cmd_episodes_show)
    ep.set_defaults(fn=lambda args: _usage(ep))


# -- self-play --------------------------------------------------------------------------


def _prefect_env() -> None:
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


@contextlib.contextmanager
def _no_leftovers(run_dir: Path):
    """A command that fails before a new run finished any stage leaves no run database
    behind (one that finished a stage is kept: the next ``spade run`` resumes it)."""
    db = run_dir / "spade.duckdb"
    existed = db.exists()
    try:
        yield
    except BaseException:
        if not existed and db.exists():
            from spade_tasks import runtime
            from spade_tasks.store import Store

            runtime.close_all()  # the flow's runtime holds the file open
            with Store(db) as store:
                finished = store.count("stages", run=run_dir.name)
            if not finished:
                for f in (db, db.with_name(db.name + ".wal")):
                    f.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    run_dir.rmdir()  # only when nothing else is in it
        raise


def cmd_run(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)  # fail fast, before Prefect starts
    _prefect_env()
    # The flow definition lives in flows/ (the deployment's entry point); the CLI is the
    # one place in the package that starts it, and Prefect loads only for these commands.
    from flows.generation import spade as spade_flow
    from spade_tasks.orchestration import flow_for, prefect_api

    n = args.generations or cfg.run.generations
    run_name = args.run_name or cfg.run.name
    with _no_leftovers(cfg.run.root / run_name), prefect_api() as api_url:
        spade = flow_for(spade_flow, cfg, api_url)
        for _ in range(n):
            summary = spade(config=str(Path(args.config).resolve()), run_name=run_name)
            _print_generation(summary, run_name)
    root = cfg.run.root / run_name
    print(f"DuckDB: {root / 'spade.duckdb'}")
    print(f"checkpoint: {summary.get('checkpoint')}")
    print(f"MLflow: mlflow ui --backend-store-uri {cfg.tracking.mlflow_uri}")
    print(f"environments: spade envs list --run {run_name}")
    print(f"designs: spade designs list --run {run_name}")
    return 0


def _add_run_command(sub) -> None:
    r = sub.add_parser(
        "run", help="run self-play generations (Prefect flow, in-process)",
        description="Run the next generations of a self-play run; each is one run of the "
        "Prefect flow `spade`. A run continues where the last one stopped.",
        epilog="examples:\n  spade run\n"
        "  spade run --config configs/cpu-tiny-fixed.yaml --generations 5 --run-name baseline")
    _add_config(r)
    r.add_argument("--generations", type=_positive_int, default=None, metavar="N",
                   help="generations to run (default: the config's run.generations)")
    r.add_argument("--run-name", default=None, metavar="NAME",
                   help="self-play run to create or continue (default: the config's run.name)")
    _add_root(r)
    r.set_defaults(fn=cmd_run)


def cmd_serve(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    _prefect_env()
    if not os.environ.get("PREFECT_API_URL"):
        raise UserError("PREFECT_API_URL is not set: start `prefect server start` and "
                        "export PREFECT_API_URL=http://127.0.0.1:4200/api first")
    from flows.generation import spade as spade_flow  # see cmd_run
    from spade_tasks.orchestration import flow_for

    print("serving flow 'spade' as deployment 'generation'; trigger it with "
          "`prefect deployment run spade/generation`", flush=True)
    flow_for(spade_flow, cfg).serve(name="generation",
                parameters={"config": str(Path(args.config).resolve()), "run_name": args.run_name})
    return 0


def _add_serve(sub) -> None:
    sv = sub.add_parser(
        "serve", help="serve the flow as deployment spade/generation",
        description="Serve the flow so `prefect deployment run spade/generation` runs the "
        "next generation (needs a Prefect server and PREFECT_API_URL).",
        epilog="example:\n  export PREFECT_API_URL=http://127.0.0.1:4200/api\n"
        "  spade serve --config configs/cpu-tiny.yaml")
    _add_config(sv)
    sv.add_argument("--run-name", default=None, metavar="NAME",
                    help="self-play run the deployment advances (default: the config's run.name)")
    _add_root(sv)
    sv.set_defaults(fn=cmd_serve)


def cmd_design(args) -> int:
    from spade_tasks.config import load_config

    cfg = load_config(args.config)
    _prefect_env()
    from spade_tasks.design_command import run_design

    with _no_leftovers(cfg.run.root / cfg.run.name):
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
    print(f"  every design: spade designs list --run {summary.run}")
    return 0


def _add_warmstart(sub) -> None:
    w = sub.add_parser(
        "warmstart", help="the designer's warm start alone (cached by content)",
        description="Supervised fine-tuning of the designer role on (designer prompt -> "
        "program) pairs from the config's warmstart.sources, as the flow's warmstart stage "
        "runs it before the first generation; the checkpoint is cached by content, so the "
        "flow then reuses it.",
        epilog="example:\n  spade warmstart --config configs/cpu-tiny.yaml --json")
    _add_config(w)
    w.add_argument("--json", action="store_true", help="print the result as one JSON object")
    _add_root(w)
    w.set_defaults(fn=cmd_warmstart)


def _add_report(sub) -> None:
    rp = sub.add_parser(
        "report", help="one row per generation: validity, rewards, win rates, samples trained",
        description="The learning curves of a self-play run: per generation the designs, "
        "accepted non-duplicates, validity rate, rejections by check, designer reward, "
        "samples trained per role, win rates with and without hint, regret. Writes the "
        "curves as a PNG beside the run (and to MLflow).",
        epilog="examples:\n  spade report\n  spade report --run cpu-tiny --json\n"
        "  spade report --run cpu-tiny --recheck")
    _add_config(rp)
    rp.add_argument("--run", default=None, metavar="NAME",
                    help="self-play run (default: the config's run.name)")
    rp.add_argument("--json", action="store_true", help="print the report as one JSON object")
    rp.add_argument("--recheck", action="store_true",
                    help="validate each generation's designs accepted as new again under "
                    "today's checks (accepted_now, refused_now)")
    _add_root(rp)
    rp.set_defaults(fn=cmd_report)


def _add_design(sub) -> None:
    d = sub.add_parser(
        "design", help="write, validate and record designs (no rollouts)",
        description="One designer step: sample documents, write programs, validate and "
        "record them in the run's DuckDB; no agent rollouts, no training. Designs on the "
        "run's latest weights; a run with none designs on the config's first warm start "
        "(cached by content), as the flow's first generation does.",
        epilog="example:\n  spade design --n 2 --json")
    _add_config(d)
    d.add_argument("--n", type=_positive_int, default=None,
                   help="designs to write (default: the config's designer.designs_per_generation)")
    d.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _add_root(d)
    d.set_defaults(fn=cmd_design)


# -- evaluation -------------------------------------------------------------------------


def _compare_side(cfg, name: str):
    """``(label, {suite: {item: score}})`` of a self-play run's latest evaluated checkpoint
    per suite, or of an evaluation run recorded in the config's run."""
    from spade_tasks import evaluation

    run_dir = cfg.run.root / name
    if (run_dir / "spade.duckdb").is_file():
        with _open_store(run_dir) as store:
            latest = evaluation.latest_scores(store)
        return {suite: scores for suite, (_, scores) in latest.items()}
    db = evaluation.eval_store_path(cfg)
    if db.is_file():
        with _open_store(db.parent) as store:
            scores = evaluation.scores_of(store, name)
        if scores:
            return scores
    runs = ", ".join(p.parent.name for p in sorted(cfg.run.root.glob("*/spade.duckdb")))
    raise UserError(f"{name}: neither a self-play run under {cfg.run.root} (runs: "
                    f"{runs or 'none'}) nor an evaluation run in {db}")


def _eval_compare(cfg, a: str, b: str) -> int:
    from spade_tasks import evaluation

    sa, sb = _compare_side(cfg, a), _compare_side(cfg, b)
    rows = evaluation.compare_scores(sa, sb)
    if not rows:
        raise UserError(f"--compare {a} {b}: no suite and item evaluated in both "
                        f"({a}: {', '.join(sorted(sa)) or 'none'}; "
                        f"{b}: {', '.join(sorted(sb)) or 'none'})")
    print(f"{'suite':18} {'n':>4} {a[:22]:>22} {b[:22]:>22} {'delta':>7}")
    for r in rows:
        print(f"{r['suite']:18} {r['n']:4d} {r['score_a']:22.3f} {r['score_b']:22.3f} "
              f"{r['delta']:+7.3f}")
    path = evaluation.plot_compare(rows, a, b, cfg.run.root / f"compare-{a}-{b}.png")
    print(f"plot: {path}")
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

    obj, png = report.report(cfg, args.run, again=args.recheck)
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
        return _eval_compare(cfg, *args.compare)
    if not args.suite:
        raise UserError("eval needs --suite NAME (or --compare RUN_A RUN_B); suites: "
                        + ", ".join(evaluation.suite_names()))
    evaluation.get_suite(args.suite)  # an unknown name fails before the model loads
    if args.checkpoint and not Path(args.checkpoint).exists():
        raise UserError(f"{args.checkpoint}: no such checkpoint")
    res = evaluation.run_eval(cfg, args.suite, args.limit, args.checkpoint)
    print(f"{res.suite}: {res.score:.3f} over {res.n} items (evaluation run {res.run})")
    return 0


def _add_eval(sub) -> None:
    ev = sub.add_parser(
        "eval", help="evaluate on a held-out suite, or compare two runs",
        description="Evaluate the config's model (or a checkpoint) on a held-out suite, "
        "recorded in the config's run; or compare two self-play runs, the latest "
        "evaluated checkpoint of each, on the suites and items both have.",
        epilog="examples:\n  spade eval --suite reasoning-gym --limit 8\n"
        "  spade eval --suite humaneval --checkpoint runs/cpu-tiny/checkpoints/gen-0004\n"
        "  spade eval --compare cpu-tiny-fixed cpu-tiny")
    ev.add_argument("--suite", default=None, metavar="NAME",
                    help="suite: humaneval, bfcl-multi-turn, reasoning-gym, textarena or "
                    "word-games (default: none; needed unless --compare)")
    ev.add_argument("--limit", type=_positive_int, default=None, metavar="N",
                    help="items to evaluate, a seeded subset (default: the whole suite)")
    ev.add_argument("--checkpoint", default=None, metavar="DIR",
                    help="checkpoint folder to evaluate (default: the config's model.name)")
    ev.add_argument("--compare", nargs=2, metavar=("RUN_A", "RUN_B"), default=None,
                    help="compare two self-play runs (or two evaluation runs of the config's "
                    "run): a table per suite and a PNG plot (default: no comparison)")
    _add_config(ev)
    _add_root(ev)
    ev.set_defaults(fn=cmd_eval)


# -- the parser -------------------------------------------------------------------------


def _usage(parser: argparse.ArgumentParser) -> int:
    """A command group given without its command: its full help, exit 2."""
    parser.print_help(sys.stderr)
    return 2


COMMANDS = [_add_run_command, _add_report, _add_validate, _add_play, _add_envs, _add_designs,
            _add_episodes, _add_design, _add_warmstart, _add_eval, _add_import, _add_serve]
"""Each adds one command to the subparsers, in the order ``spade --help`` lists them."""


def _version() -> str:
    try:
        return metadata.version("spade")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="spade", description="Self-play RL in model-written environments: "
                 "one language model designs executable environments and learns to play them.",
                 epilog="start with:\n  spade run                 # one generation on the "
                 "embedded default\n  spade envs list           # what it produced\n"
                 "  spade COMMAND --help      # a command's options and an example\n\n"
                 "docs: README.md and docs/ in the project")
    ap.add_argument("--version", action="version", version=f"spade {_version()}",
                    help="print the version and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    ap.set_defaults(fn=lambda args: _usage(ap))
    return ap


INTERNAL_ERROR = 3
"""Exit code of `spade validate`/`spade import` when the checker itself fails (no
sandbox, a bug): distinct from 1, which says a program was rejected."""
CHECKING_COMMANDS = ("validate", "import")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "root", None):
        os.environ[ROOT_ENV] = str(Path(args.root).expanduser().resolve())
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
    except BrokenPipeError:
        # The reader went away (`spade envs list | head`): stop quietly, as the Python
        # docs advise, so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
