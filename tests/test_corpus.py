"""Corpus loading and seeded, no-repeat document sampling."""

import json

import pytest

from spade_tasks.config import CorpusConfig
from spade_tasks.corpus import CorpusError, load_corpus, sample_documents, truncate_words
from spade_tasks.errors import UserError
from spade_tasks.store import Store

NEWS = CorpusConfig(source="embedded:news", max_words=40)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "run.duckdb") as s:
        yield s


def _jsonl(path, texts, field="text"):
    path.write_text("".join(json.dumps({field: t, "n": i}) + "\n" for i, t in enumerate(texts)))
    return path


def test_embedded_news_is_real_text():
    ds = load_corpus(NEWS)
    assert len(ds) == 300
    assert "bushfire" in ds[0]["text"]


def test_embedded_wiki_markup_is_stripped():
    ds = load_corpus(CorpusConfig(source="embedded:wiki"))
    assert len(ds) > 80
    texts = ds["text"]
    assert any(t.startswith("Anarchism\n") for t in texts)
    for bad in ("[[", "{{", "<ref", "'''", "#REDIRECT"):
        assert not any(bad in t for t in texts), bad


def test_sampling_is_deterministic(tmp_path):
    picks = []
    for i in range(2):
        with Store(tmp_path / f"s{i}.duckdb") as s:
            picks.append([d.doc_id for d in sample_documents(s, "r", 0, 5, seed=7, cfg=NEWS)])
    assert picks[0] == picks[1]
    with Store(tmp_path / "s2.duckdb") as s:
        assert [d.doc_id for d in sample_documents(s, "r", 0, 5, seed=8, cfg=NEWS)] != picks[0]


def test_no_repeats_across_generations(store):
    seen = set()
    for gen in range(6):
        ids = [d.doc_id for d in sample_documents(store, "r", gen, 10, seed=1, cfg=NEWS)]
        assert len(set(ids)) == 10
        assert not seen & set(ids)
        seen |= set(ids)
    # another run of the same store may reuse the documents
    other = [d.doc_id for d in sample_documents(store, "other", 0, 10, seed=1, cfg=NEWS)]
    assert len(other) == 10


def test_rerun_of_a_generation_replaces_its_rows(store):
    first = sample_documents(store, "r", 0, 4, seed=3, cfg=NEWS)
    second = sample_documents(store, "r", 0, 4, seed=3, cfg=NEWS)
    assert first == second
    assert store.count("documents", run="r", generation=0) == 4
    rows = store.rows("SELECT doc_idx, doc_id, text FROM documents ORDER BY doc_idx")
    assert [r["doc_id"] for r in rows] == [d.doc_id for d in first]


def test_documents_are_truncated(store):
    for d in sample_documents(store, "r", 0, 3, seed=0, cfg=NEWS):
        assert len(d.text.split()) <= 40
    assert truncate_words("a b\nc  d e", 3) == "a b\nc"
    assert truncate_words("  short ", 10) == "short"


def test_no_corpus_ablation(store):
    assert sample_documents(store, "r", 0, 4, seed=0, cfg=CorpusConfig(source="none")) == []
    assert store.count("documents") == 0


def test_local_jsonl_and_exhaustion(store, tmp_path):
    cfg = CorpusConfig(source=str(_jsonl(tmp_path / "c.jsonl", ["one a", "", "two b", "three c"])))
    g0 = {d.doc_id for d in sample_documents(store, "r", 0, 2, seed=0, cfg=cfg)}
    g1 = {d.doc_id for d in sample_documents(store, "r", 1, 2, seed=0, cfg=cfg)}
    assert len(g0) == 2 and len(g1) == 2
    # three non-empty documents: generation 1 takes the unused one, then reuses one
    assert len(g0 | g1) == 3
    assert "c:1" not in g0 | g1  # the empty text is never a document


def test_local_jsonl_streamed(store, tmp_path):
    cfg = CorpusConfig(source=str(_jsonl(tmp_path / "c.jsonl", [f"doc {i}" for i in range(20)])),
                       streaming=True)
    a = [d.doc_id for d in sample_documents(store, "r", 0, 5, seed=0, cfg=cfg)]
    b = [d.doc_id for d in sample_documents(store, "r", 1, 5, seed=0, cfg=cfg)]
    assert len(set(a)) == 5 and not set(a) & set(b)


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_corpus(CorpusConfig(source=str(tmp_path / "nope.jsonl")))


def test_missing_text_field_names_the_fields(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", ["x"], field="body")
    with pytest.raises(CorpusError, match=r"no field 'text' \(fields: body, n\)"):
        load_corpus(CorpusConfig(source=str(path)))
    assert len(load_corpus(CorpusConfig(source=str(path), text_field="body"))) == 1


def test_unknown_embedded_corpus():
    with pytest.raises(CorpusError, match="unknown embedded corpus"):
        load_corpus(CorpusConfig(source="embedded:poems"))
