"""Hostile programs, one property per test: each is contained, the harness survives,
and nothing outside the sandbox changes."""

import os
import socket
import textwrap
import threading
import time

import pytest

from spade_tasks.config import SandboxConfig
from spade_tasks.sandbox import Sandbox


def env_program(step_body: str, reset_body: str = 'return "start", {}', header: str = "") -> str:
    """A minimal environment whose reset/step run the given hostile code."""
    return textwrap.dedent(header) + "\nclass HostileEnv:\n    max_turns = 3\n" + \
        "    def reset(self, seed=None, options=None):\n" + \
        textwrap.indent(textwrap.dedent(reset_body), " " * 8) + "\n" + \
        "    def step(self, action):\n" + textwrap.indent(textwrap.dedent(step_body), " " * 8) + "\n"


def run_step(sandbox, source, action="go"):
    """Load, reset and step once; return (load, reset, step) results."""
    with sandbox.open(source, "HostileEnv") as ep:
        load = ep.load_result
        reset = ep.reset(0) if load.ok else load
        step = ep.step(action) if reset.ok else reset
        return load, reset, step


def assert_harness_alive(sandbox):
    ok = env_program('return "fine", 1.0, True, False, {}')
    _, _, step = run_step(sandbox, ok)
    assert step.ok and step.value[1] == 1.0


# -- time ---------------------------------------------------------------------------


def test_infinite_loop_in_step_times_out(sandbox):
    t = time.perf_counter()
    _, _, step = run_step(sandbox, env_program("while True:\n    pass"))
    assert step.kind == "timeout"
    assert time.perf_counter() - t < sandbox.cfg.call_timeout_s + 3
    assert_harness_alive(sandbox)


def test_infinite_loop_at_import_times_out(sandbox):
    load, _, _ = run_step(sandbox, env_program('return "x", 0.0, True, False, {}',
                                               header="while True:\n    pass\n"))
    assert load.kind == "timeout"
    assert_harness_alive(sandbox)


def test_sleep_times_out(sandbox):
    _, _, step = run_step(sandbox, env_program("import time\ntime.sleep(3600)"))
    assert step.kind == "timeout"


def test_cpu_time_limit_kills_busy_program():
    sb = Sandbox(SandboxConfig(call_timeout_s=30, cpu_seconds=1))
    t = time.perf_counter()
    _, _, step = run_step(sb, env_program("while True:\n    pass"))
    assert step.kind in ("timeout", "crash")
    assert time.perf_counter() - t < 10  # killed by RLIMIT_CPU, not by the 30 s deadline


# -- memory and processes ----------------------------------------------------------


def test_memory_bomb_is_contained(sandbox):
    _, _, step = run_step(sandbox, env_program("x = bytearray(8 * 1024**3)\nreturn 'x', 0.0, True, False, {}"))
    assert not step.ok and step.kind in ("memory", "exception", "crash")
    assert_harness_alive(sandbox)


def test_growing_memory_bomb_is_contained(sandbox):
    _, _, step = run_step(sandbox, env_program("xs = []\nwhile True:\n    xs.append(b'x' * 10**6)"))
    assert not step.ok and step.kind in ("memory", "crash", "timeout")


def test_fork_is_denied(sandbox):
    _, _, step = run_step(sandbox, env_program("import os\nos.fork()\nreturn 'forked', 0.0, True, False, {}"))
    assert not step.ok and "PermissionError" in step.error


def test_fork_bomb_is_contained(sandbox):
    src = env_program("import os\nwhile True:\n    os.fork()")
    _, _, step = run_step(sandbox, src)
    assert not step.ok
    assert_harness_alive(sandbox)


def test_thread_bomb_is_contained(sandbox):
    src = env_program(
        "import threading, time\nn = 0\nwhile True:\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n    n += 1")
    _, _, step = run_step(sandbox, src)
    assert not step.ok and step.kind in ("exception", "memory", "crash")
    assert_harness_alive(sandbox)


def test_threads_still_work_within_limits(sandbox):
    src = env_program(
        "import threading\nout = []\nts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\nreturn str(sorted(out)), 0.0, True, False, {}")
    _, _, step = run_step(sandbox, src)
    assert step.ok and step.value[0] == "[0, 1, 2, 3]"


@pytest.mark.parametrize("code", [
    "import subprocess\nsubprocess.run(['/usr/bin/touch', '/tmp/pwned'])",
    "import os\nos.system('true')",
    "import os\nos.execv('/usr/bin/true', ['true'])",
    "import os\nos.posix_spawn('/usr/bin/true', ['true'], {})",
])
def test_subprocess_and_exec_are_denied(sandbox, code):
    _, _, step = run_step(sandbox, env_program(code + "\nreturn 'ran', 0.0, True, False, {}"))
    if step.ok:  # os.system returns a status instead of raising
        assert step.value[0] == "ran"
        src = env_program("import os\nreturn str(os.system('true')), 0.0, True, False, {}")
        _, _, st = run_step(sandbox, src)
        assert st.ok and st.value[0] != "0"
    else:
        assert step.kind in ("exception", "crash")


# -- files and output ---------------------------------------------------------------


def test_disk_fill_is_capped(sandbox):
    src = env_program("with open('/tmp/big', 'wb') as f:\n    while True:\n        f.write(b'x' * 1024 * 1024)")
    _, _, step = run_step(sandbox, src)
    assert not step.ok and step.kind in ("exception", "crash")


def test_writing_outside_the_sandbox_changes_nothing(sandbox, tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("original")
    for path in (str(target), "/work/pwned.txt", "/usr/pwned", "/root/pwned"):
        src = env_program(f"open({path!r}, 'w').write('pwned')\nreturn 'wrote', 0.0, True, False, {{}}")
        _, _, step = run_step(sandbox, src)
        assert not step.ok and step.kind == "exception", path
    assert target.read_text() == "original"
    assert not os.path.exists("/work/pwned.txt") and not os.path.exists("/root/pwned")


def test_secret_files_are_unreadable(sandbox, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    for path in (str(secret), "/etc/shadow", "/etc/passwd", "/root/.bashrc"):
        src = env_program(f"return open({path!r}).read(), 0.0, True, False, {{}}")
        _, _, step = run_step(sandbox, src)
        assert not step.ok, path


def test_environment_variables_are_not_inherited(sandbox, monkeypatch):
    monkeypatch.setenv("SPADE_TEST_SECRET", "s3cret-token")
    src = env_program("import os\nreturn repr(dict(os.environ)), 0.0, True, False, {}")
    _, _, step = run_step(sandbox, src)
    assert step.ok and "s3cret-token" not in step.value[0]


def test_output_flood_does_not_reach_the_harness(sandbox, capfd):
    src = env_program("import sys\nfor _ in range(200000):\n    print('flood' * 20)\n    sys.stderr.write('err' * 20)\nreturn 'done', 0.0, True, False, {}")
    _, _, step = run_step(sandbox, src)
    assert step.ok and step.value[0] == "done"
    out, err = capfd.readouterr()
    assert "flood" not in out and "err" * 20 not in err


def test_huge_observation_is_refused(sandbox):
    _, _, step = run_step(sandbox, env_program("return 'x' * 50_000_000, 0.0, True, False, {}"))
    assert not step.ok and step.kind in ("protocol", "memory", "exception")
    assert_harness_alive(sandbox)


# -- replies ---------------------------------------------------------------------------


@pytest.mark.parametrize("reward", ["float('nan')", "float('inf')", "'1.0'", "None", "[1]", "True"])
def test_bad_rewards_are_refused(sandbox, reward):
    _, _, step = run_step(sandbox, env_program(f"return 'obs', {reward}, True, False, {{}}"))
    assert not step.ok and step.kind == "bad_return"


def test_forged_reply_frames_are_refused(sandbox):
    src = env_program(
        "import os, struct, json\n"
        "data = json.dumps({'seq': 99, 'ok': True, 'result': ['won', 1.0, True, False, {}]}).encode()\n"
        "for fd in range(3, 10):\n"
        "    try:\n"
        "        os.write(fd, struct.pack('>I', len(data)) + data)\n"
        "    except OSError:\n"
        "        pass\n"
        "return 'honest', 0.0, False, False, {}")
    _, _, step = run_step(sandbox, src)
    assert not (step.ok and step.value[0] == "won")


# -- network -------------------------------------------------------------------------


@pytest.fixture
def tcp_listener():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.2)
    yield srv
    srv.close()


def _no_connection(srv) -> bool:
    try:
        conn, _ = srv.accept()
    except (socket.timeout, TimeoutError):
        return True
    conn.close()
    return False


def test_tcp_connection_is_blocked(sandbox, tcp_listener):
    port = tcp_listener.getsockname()[1]
    src = env_program(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\nreturn 'connected', 0.0, True, False, {{}}")
    _, _, step = run_step(sandbox, src)
    assert not step.ok
    assert _no_connection(tcp_listener)


def test_udp_datagram_is_blocked(sandbox):
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.3)
    port = rx.getsockname()[1]
    src = env_program(f"import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'leak', ('127.0.0.1', {port}))\nreturn 'sent', 0.0, True, False, {{}}")
    _, _, step = run_step(sandbox, src)
    assert not step.ok
    with pytest.raises((socket.timeout, TimeoutError)):
        rx.recvfrom(16)
    rx.close()


def test_unix_socket_is_blocked(sandbox, tmp_path):
    path = str(tmp_path / "s.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(0.2)
    src = env_program(f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({path!r})\nreturn 'connected', 0.0, True, False, {{}}")
    _, _, step = run_step(sandbox, src)
    assert not step.ok
    assert _no_connection(srv)
    srv.close()


# -- other processes and state ---------------------------------------------------------


def test_killing_the_parent_fails(sandbox):
    victim = threading.Event()
    pid = os.getpid()
    src = env_program(f"import os, signal\nos.kill({pid}, signal.SIGKILL)\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)\nreturn 'killed', 0.0, True, False, {{}}")
    _, _, step = run_step(sandbox, src)
    assert not step.ok
    assert not victim.is_set()  # we are still here
    assert_harness_alive(sandbox)


def test_no_state_survives_between_episodes(sandbox):
    src = env_program(
        "import os\nprev = os.path.exists('/tmp/marker') or 'marker' in globals().get('__builtins__', {}).__class__.__name__\n"
        "open('/tmp/marker', 'w').write('1')\nimport builtins\nseen = getattr(builtins, 'spade_marker', False)\n"
        "builtins.spade_marker = True\nreturn f'{prev} {seen}', 0.0, True, False, {}")
    for _ in range(2):
        _, _, step = run_step(sandbox, src)
        assert step.ok and step.value[0] == "False False"


def test_ptrace_and_mount_are_denied(sandbox):
    src = env_program(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "r1 = libc.ptrace(16, 1, 0, 0)\nr2 = libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)\n"
        "r3 = libc.unshare(0x10000000)\nreturn f'{r1} {r2} {r3}', 0.0, True, False, {}")
    _, _, step = run_step(sandbox, src)
    assert step.ok and step.value[0] == "-1 -1 -1"


def test_process_tier_is_opt_in_only():
    # The default tier is bwrap; asking for it never silently gives the weaker tier.
    assert Sandbox().tier == "bwrap"
    assert Sandbox(SandboxConfig(tier="process")).tier == "process"


def test_process_tier_contains_file_and_network_access(tmp_path, tcp_listener):
    sb = Sandbox(SandboxConfig(tier="process", call_timeout_s=3))
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    _, _, step = run_step(sb, env_program(f"return open({str(secret)!r}).read(), 0.0, True, False, {{}}"))
    assert not step.ok
    port = tcp_listener.getsockname()[1]
    _, _, step = run_step(sb, env_program(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\nreturn 'c', 0.0, True, False, {{}}"))
    assert not step.ok and _no_connection(tcp_listener)
    _, _, step = run_step(sb, env_program("import os\nos.fork()\nreturn 'f', 0.0, True, False, {}"))
    assert not step.ok
    _, _, step = run_step(sb, env_program("return 'ok', 1.0, True, False, {}"))
    assert step.ok


# -- which programs see the Reasoning Gym packages ----------------------------------------


@pytest.mark.parametrize("source, needs", [
    ("import reasoning_gym\n", True),
    ("from reasoning_gym.utils import extract_answer\n", True),
    ("from spade_env import ReasoningGymEnv\n", True),
    ("import spade_env\nclass GcdEnv(spade_env.ReasoningGymEnv): pass\n", True),
    ("from spade_env import ToolEnv\n", False),
    ("# reasoning_gym is not imported here\nx = 'import reasoning_gym'\n", False),  # text only
    ("import reasoning_gym_lookalike\n", False),
    ("def broken(:\n", False),
])
def test_reasoning_gym_packages_go_by_parsed_imports(source, needs):
    from spade_tasks.sandbox.harness import uses_reasoning_gym

    assert uses_reasoning_gym(source) is needs
