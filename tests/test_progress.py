"""The stage line a log (no terminal) gets when a stage ends."""

from spade_tasks import progress


def test_a_stage_line_counts_items_and_tokens(capsys):
    with progress.stage("design") as st:
        st.advance(3, tokens=120)
    err = capsys.readouterr().err
    assert err.startswith("[spade] design: 3 done in ")
    assert "120 tokens" in err


def test_a_stage_that_found_its_result_ready_says_so_not_zero_done(capsys):
    # A cached warm start ran no step: "0 done" read as if it had failed to train.
    with progress.stage("warm start", total=90) as st:
        st.done_as("cached")
    err = capsys.readouterr().err
    assert err.startswith("[spade] warm start: cached in ")
    assert "0 done" not in err
