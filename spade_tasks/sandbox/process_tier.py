"""The ``process`` isolation tier, for hosts where user namespaces are blocked.

Chosen only by config (``sandbox.tier: process``). The worker runs as an unprivileged
uid in its own session, with cwd in a private scratch directory, and Landlock (where the
kernel has it) limits file access to reading the interpreter, the allowed packages and
system libraries and writing the scratch directory. The worker then applies the same
rlimits and seccomp filter as in the ``bwrap`` tier. Weaker than ``bwrap``: it shares the
host's pid and network namespaces (seccomp still denies ``socket``), and the scratch
directory is capped per file (RLIMIT_FSIZE), not in total.
"""

from __future__ import annotations

import ctypes
import os

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # x86_64 and arm64
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
# Landlock filesystem access rights (ABI 1..3).
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (1 << i for i in range(8, 13))
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_READ = _EXECUTE | _READ_FILE | _READ_DIR
_ALL_V1 = (1 << 13) - 1
_FILE_RIGHTS = _EXECUTE | _READ_FILE | _WRITE_FILE  # the only rights a non-directory takes


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock(readable: list[str], writable: list[str]) -> bool:
    """Restrict this process's file access; False when the kernel lacks Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _RulesetAttr(_ALL_V1)
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        return False
    for paths, access in ((readable, _READ), (writable, _ALL_V1)):
        for p in paths:
            if not os.path.exists(p):
                continue
            pfd = os.open(p, os.O_PATH | os.O_CLOEXEC)
            rule = _PathBeneath(access if os.path.isdir(p) else access & _FILE_RIGHTS,
                                pfd)
            libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
            os.close(pfd)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    ok = libc.syscall(_SYS_RESTRICT_SELF, fd, 0) == 0
    os.close(fd)
    return ok


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    """Clear every capability set of this process (uid 0 stays, its powers go)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; unknown caps fail harmlessly
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _readable_by(uid: int, path: str) -> bool:
    """Whether ``uid`` (not root) can traverse to and read ``path``: every ancestor
    must be world-searchable (a venv under /root, mode 700, is not)."""
    p = os.path.realpath(path)
    while p != "/":
        if not os.stat(p).st_mode & 0o001 and os.stat(p).st_uid != uid:
            return False
        p = os.path.dirname(p)
    return True


def make_preexec(scratch: str, readable: list[str], uid: int):
    """A preexec_fn that drops privileges and confines file access before exec.

    As root, the worker becomes ``uid`` when every path it must read is reachable by
    that uid; otherwise it stays uid 0 with every capability dropped, and Landlock is
    then required (else root could still write root-owned files)."""
    root = os.geteuid() == 0
    become_uid = root and all(_readable_by(uid, p) for p in readable)
    if become_uid:
        os.chown(scratch, uid, uid)
    os.chmod(scratch, 0o700)

    def preexec():
        if become_uid:
            # Root's RLIMIT_NPROC is not enforced and root may read everything: drop it.
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        elif root:
            _drop_capabilities()
        confined = _landlock(readable + ["/etc/ld.so.cache", "/dev/urandom"],
                             [scratch, "/dev/null"])
        if root and not become_uid and not confined:
            raise OSError("process tier as root needs Landlock, which this kernel lacks")

    return preexec
