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
        report = validate_path(path, sandbox, cfg.validation)
        all_ok &= report.accepted
        if args.json:
            print(json.dumps(report.to_json()), flush=True)
        else:
            verdict = "ACCEPTED" if report.accepted else "REJECTED"
            print(f"{verdict} {path} [{report.class_name or '?'}, sandbox tier {report.tier}]")
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
    with sandbox.open(source, class_name, {"max_turns": 10}) as ep:
        if not ep.load_result.ok:
            raise SpadeError(f"{path}: {ep.load_result.error}")
        max_turns = ep.meta.max_turns or 10
    if args.policy == "oracle":
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
    print(f"== {path} ({class_name}), seed {args.seed}, policy {args.policy}")
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


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="spade", description="Self-play RL in model-written environments.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("validate", help="check environment programs against the contract")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--json", action="store_true", help="one JSON object per program")
    v.add_argument("--config", default=None, help="YAML config (sandbox and validation)")
    v.set_defaults(fn=cmd_validate)

    p = sub.add_parser("play", help="play one episode of an environment program")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--policy", choices=["oracle"], default="oracle")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hint", action="store_true", help="show the privileged hint")
    p.add_argument("--json", action="store_true")
    p.add_argument("--config", default=None)
    p.set_defaults(fn=cmd_play)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except UserError as e:
        print(f"spade: error: {e}", file=sys.stderr)
        return e.exit_code
    except SpadeError as e:
        print(f"spade: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("spade: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
