"""Sandbox overhead: worker start and per-step round trip, against two baselines
measured in the same run (a plain subprocess speaking the same framed protocol, and an
in-process call). Prints medians and ratios; goals: step round trip <= 2x the plain
subprocess pipe, worker start <= 50 ms.

    .venv/bin/python benchmarks/sandbox.py [--starts 30] [--steps 3000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import struct
import subprocess
import sys
import time

from spade_tasks.config import SandboxConfig
from spade_tasks.sandbox import Sandbox

PROGRAM = '''
class CounterEnv:
    """Count steps."""
    max_turns = 64
    def reset(self, seed=None, options=None):
        self.n = 0
        return "start", {}
    def step(self, action):
        self.n += 1
        return str(self.n), 0.0, False, False, {}
'''

# The plain baseline: an unsandboxed interpreter answering the same frames.
PLAIN_WORKER = r'''
import json, os, struct, sys
r, w = sys.stdin.buffer, sys.stdout.buffer
w.write(b"\x00\x00\x00\x02{}"); w.flush()
n = 0
while True:
    h = r.read(4)
    if not h:
        break
    req = json.loads(r.read(struct.unpack(">I", h)[0]))
    n += 1
    data = json.dumps({"seq": req["seq"], "ok": True, "result": [str(n), 0.0, False, False, {}]}).encode()
    w.write(struct.pack(">I", len(data)) + data); w.flush()
'''


class Plain:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-S", "-c", PLAIN_WORKER],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._read()
        self.seq = 0

    def _read(self):
        n = struct.unpack(">I", self.p.stdout.read(4))[0]
        return json.loads(self.p.stdout.read(n))

    def step(self, action):
        self.seq += 1
        data = json.dumps({"seq": self.seq, "op": "step", "action": action}).encode()
        self.p.stdin.write(struct.pack(">I", len(data)) + data)
        self.p.stdin.flush()
        return self._read()

    def close(self):
        self.p.kill()
        self.p.wait()


def median_ms(samples):
    return statistics.median(samples) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("--steps", type=int, default=3000)
    args = ap.parse_args()

    tiers = {"bwrap": Sandbox(SandboxConfig(tier="bwrap")),
             "process": Sandbox(SandboxConfig(tier="process"))}

    # Worker start: spawn + load the program, ready for reset.
    start = {name: [] for name in [*tiers, "plain"]}
    for _ in range(args.starts):
        for name, sb in tiers.items():
            t = time.perf_counter()
            ep = sb.open(PROGRAM, "CounterEnv")
            assert ep.load_result.ok, ep.load_result.error
            start[name].append(time.perf_counter() - t)
            ep.close()
        t = time.perf_counter()
        pl = Plain()
        start["plain"].append(time.perf_counter() - t)
        pl.close()

    # Step round trip on a persistent worker.
    step = {}
    for name, sb in tiers.items():
        with sb.open(PROGRAM, "CounterEnv") as ep:
            ep.reset(0)
            samples = []
            for _ in range(args.steps):
                t = time.perf_counter()
                ep.step("a")
                samples.append(time.perf_counter() - t)
            step[name] = samples
    pl = Plain()
    samples = []
    for _ in range(args.steps):
        t = time.perf_counter()
        pl.step("a")
        samples.append(time.perf_counter() - t)
    step["plain"] = samples
    pl.close()
    ns = {}
    exec(compile(PROGRAM, "<bench>", "exec"), ns)  # our own constant program, trusted
    env = ns["CounterEnv"]()
    env.reset(0)
    samples = []
    for _ in range(args.steps):
        t = time.perf_counter()
        env.step("a")
        samples.append(time.perf_counter() - t)
    step["in-process"] = samples

    base_start, base_step = median_ms(start["plain"]), median_ms(step["plain"])
    print(f"{'':12} {'start ms':>10} {'x plain':>8} {'step us':>10} {'x plain':>8}")
    for name in [*tiers, "plain", "in-process"]:
        s = median_ms(start[name]) if name in start else float("nan")
        st = median_ms(step[name])
        print(f"{name:12} {s:10.1f} {s / base_start:8.2f} {st * 1e3:10.1f} {st / base_step:8.2f}")
    b_start, b_step = median_ms(start["bwrap"]), median_ms(step["bwrap"])
    print(f"goals: bwrap step <= 2x plain: {b_step / base_step:.2f}x "
          f"({'met' if b_step <= 2 * base_step else 'NOT met'}); "
          f"bwrap start <= 50 ms: {b_start:.1f} ms ({'met' if b_start <= 50 else 'NOT met'})")


if __name__ == "__main__":
    main()
