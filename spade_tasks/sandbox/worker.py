"""The sandbox worker: runs ONE untrusted environment program for one episode.

This file is executed inside the isolation boundary (``python -I -S worker.py``), never
imported by the harness. It uses only the standard library (libseccomp through ctypes).

Order matters: protocol fds are saved, stdio is pointed at /dev/null, resource limits
and the seccomp filter are installed, and only then is the program compiled and run.
Nothing here is trusted by the harness: the program shares this process and can forge
replies, so the harness checks every reply it reads.

Protocol: frames of a 4-byte big-endian length then UTF-8 JSON. Requests are
``{"seq": n, "op": ..., ...}``; replies ``{"seq": n, "ok": true, "result": ...}`` or
``{"seq": n, "ok": false, "error": "<kind>: <detail>"}``.
"""

import json
import os
import resource
import struct
import sys

MAX_FRAME = 16 * 1024 * 1024


def _limits(cfg):
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["fsize_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_NPROC, (cfg["max_threads"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# libseccomp's ABI (seccomp.h): actions and the comparison used for clone's flags.
_ACT_ALLOW = 0x7FFF0000
_ACT_ERRNO = 0x00050000
_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000
DENIED = (
    "fork", "vfork", "execve", "execveat",
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg",
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal",
    "pidfd_open", "pidfd_getfd",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "mount_setattr", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "personality", "seccomp", "prctl",
)


def _seccomp():
    """Deny process creation, exec, sockets, signals, tracing and mounts.

    Calls libseccomp through ctypes directly (no ctypes.util.find_library, which would
    spawn ldconfig and cost tens of ms per worker)."""
    import ctypes
    import errno

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                    ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]

    lib = ctypes.CDLL("libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")

    def rule(action, name, *cmps):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # syscall unknown on this architecture: nothing to deny
        arr = (ArgCmp * len(cmps))(*cmps) if cmps else None
        if lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr) != 0:
            raise OSError(f"seccomp rule for {name} failed")

    eperm = _ACT_ERRNO | errno.EPERM
    for name in DENIED:
        rule(eperm, name)
    # clone3 must fail with ENOSYS (not EPERM) so libc falls back to clone for threads.
    rule(_ACT_ERRNO | errno.ENOSYS, "clone3")
    # clone: threads only (CLONE_THREAD set); new processes are refused.
    rule(eperm, "clone", ArgCmp(0, _CMP_MASKED_EQ, _CLONE_THREAD, 0))
    if lib.seccomp_load(ctx) != 0:
        raise OSError("seccomp_load failed")


class _Channel:
    def __init__(self, rfd, wfd):
        self.rfd, self.wfd = rfd, wfd

    def _read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = os.read(self.rfd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def recv(self):
        (n,) = struct.unpack(">I", self._read_exact(4))
        if n > MAX_FRAME:
            raise EOFError
        return json.loads(self._read_exact(n).decode("utf-8"))

    def send(self, obj):
        data = json.dumps(obj, allow_nan=True, default=_jsonable).encode("utf-8", "replace")
        frame = struct.pack(">I", len(data)) + data
        view = memoryview(frame)
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]


def _jsonable(x):
    """Numpy scalars and other numbers become plain JSON; anything else its repr."""
    for cast in (float, int):
        if type(x).__name__.startswith(("float", "int", "bool")):
            try:
                return cast(x)
            except (TypeError, ValueError):
                pass
    return repr(x)[:200]


def _short(exc):
    import traceback  # only on errors: it costs worker start time

    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(tb):
        if frame.filename == "<environment>":
            where = f" (line {frame.lineno})"
            break
    return f"{type(exc).__name__}{where}: {str(exc)[:300]}"


class _Episode:
    """Loads the program and forwards calls; all faults become error replies."""

    def __init__(self, source, class_name, kwargs):
        ns = {"__name__": "environment"}
        if "ToolUseBaseEnv" in source:
            # The reference code's tool-use programs subclass it without importing it.
            import spade_env

            ns["ToolUseBaseEnv"] = spade_env.ToolEnv
        code = compile(source, "<environment>", "exec")
        exec(code, ns)  # noqa: S102 - this process IS the sandbox
        cls = ns[class_name]
        try:
            self.env = cls(**kwargs)
        except TypeError:
            self.env = cls()
        self.plan = None  # remaining actions when solution() returned a whole sequence

    def meta(self):
        env = self.env
        doc = type(env).__doc__ or ""
        return {
            "class_name": type(env).__name__,
            "max_turns": getattr(env, "max_turns", None),
            "doc": doc.strip()[:4000],
            "has_hint": callable(getattr(env, "hint", None)),
            "has_oracle": callable(getattr(env, "oracle", None))
            or callable(getattr(env, "solution", None)),
        }

    def reset(self, seed, options=None):
        self.plan = None
        try:
            out = self.env.reset(seed=seed, options=options)
        except TypeError as e:
            if "options" not in str(e):
                raise
            out = self.env.reset(seed=seed)  # the reference code's reset(seed=None)
        return _tuple(out)

    def step(self, action):
        return _tuple(self.env.step(action))

    def hint(self):
        return self.env.hint()

    def oracle(self):
        fn = getattr(self.env, "oracle", None)
        if callable(fn):
            return fn()
        if self.plan is None:
            sol = self.env.solution()
            self.plan = list(sol) if isinstance(sol, (list, tuple)) else [sol]
        if not self.plan:
            return ""
        nxt = self.plan.pop(0)
        return nxt if isinstance(nxt, str) else json.dumps(nxt)


def _tuple(out):
    return list(out) if isinstance(out, tuple) else out


def main():
    cfg = json.loads(sys.argv[1])
    sys.path[:0] = cfg["paths"]
    # Keep the protocol on private fds; the program's own prints go to /dev/null.
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    ch = _Channel(rfd, wfd)
    _limits(cfg)
    if cfg["seccomp"]:
        _seccomp()
    ch.send({"seq": 0, "ok": True, "result": "ready"})
    episode = None
    while True:
        try:
            req = ch.recv()
        except (EOFError, OSError, ValueError):
            return
        seq, op = req.get("seq"), req.get("op")
        try:
            if op == "load":
                episode = _Episode(req["source"], req["class_name"], req.get("kwargs", {}))
                result = episode.meta()
            elif episode is None:
                raise RuntimeError("no program loaded")
            elif op == "reset":
                result = episode.reset(req.get("seed"), req.get("options"))
            elif op == "step":
                result = episode.step(req["action"])
            elif op == "hint":
                result = episode.hint()
            elif op == "oracle":
                result = episode.oracle()
            else:
                raise RuntimeError(f"unknown op {op!r}")
            reply = {"seq": seq, "ok": True, "result": result}
        except MemoryError:
            reply = {"seq": seq, "ok": False, "error": "memory: MemoryError"}
        except RecursionError as e:
            reply = {"seq": seq, "ok": False, "error": "exception: " + _short(e)}
        except BaseException as e:  # the program's fault, reported, never fatal here
            if isinstance(e, SystemExit):
                reply = {"seq": seq, "ok": False, "error": "exception: SystemExit"}
            else:
                reply = {"seq": seq, "ok": False, "error": "exception: " + _short(e)}
        try:
            ch.send(reply)
        except (TypeError, ValueError, RecursionError) as e:
            ch.send({"seq": seq, "ok": False, "error": "exception: unserialisable " + str(e)[:200]})
        except MemoryError:
            ch.send({"seq": seq, "ok": False, "error": "memory: MemoryError"})


if __name__ == "__main__":
    main()
