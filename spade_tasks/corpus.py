"""Grounding documents for the designer: load a corpus, sample from it, record the sample.

Sources (``CorpusConfig.source``):

- ``embedded:news``: 300 news articles (``lee_background.cor``) and ``embedded:wiki``: the
  ~100 real articles of a shortened English Wikipedia dump, both shipped inside the
  ``gensim`` wheel, so the default works offline on real text;
- a local ``.jsonl``/``.json``/``.parquet`` file (or a folder of them) with a text field;
- a Hugging Face data set name (optionally streamed), where the hub is reachable;
- ``none``: the no-corpus ablation, the designer gets no document.

Every source is loaded through ``datasets``. A document's id is ``<corpus>:<row index>`` for
indexable data sets and ``<corpus>:<sha256 prefix of the text>`` for streamed ones, so the
same document keeps its id across generations and the no-repeat rule can read used ids
back from the ``documents`` table.
"""

from __future__ import annotations

import bz2
import functools
import hashlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spade_tasks.config import CorpusConfig
from spade_tasks.errors import UserError
from spade_tasks.records import Documents
from spade_tasks.seeds import derive
from spade_tasks.store import Store, queries

if TYPE_CHECKING:
    from spade_tasks.stage_runtime import StageRuntime

EMBEDDED = ("embedded:news", "embedded:wiki")
NONE = "none"
# A streamed corpus is shuffled through a buffer of this many documents.
STREAM_BUFFER = 1000
# Wiki prose lines shorter than this are table cells, captions and list debris.
WIKI_MIN_LINE_WORDS = 8
WIKI_MIN_WORDS = 50


class CorpusError(UserError):
    """A corpus cannot be loaded: missing file, missing text field, unknown source."""


@dataclass(frozen=True)
class Document:
    """One grounding document, truncated to ``max_words``."""

    doc_id: str
    source: str
    text: str


# -- loading -------------------------------------------------------------------------


def _gensim_data(pattern: str) -> Path:
    # find_spec locates the wheel's files without importing gensim (scipy and friends).
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError("corpus embedded:*: the `gensim` package is not installed "
                          "(pip install gensim)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data"
    found = sorted(folder.glob(pattern))
    if not found:
        raise CorpusError(f"corpus embedded:*: no {pattern} in {folder}")
    return found[0]


def _news_rows():
    path = _gensim_data("lee_background.cor")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                yield {"title": "", "text": line.strip()}


_HEADING = re.compile(r"^=+\s*(.*?)\s*=+$")


def clean_wikitext(markup: str) -> str:
    """Prose paragraphs of one wikitext page: markup, tables, lists and refs removed."""
    from gensim.corpora.wikicorpus import filter_wiki

    text = filter_wiki(markup)
    text = re.sub(r"'{2,}", "", text)  # bold/italic quotes filter_wiki leaves
    keep = []
    for line in text.splitlines():
        line = line.strip()
        if _HEADING.match(line) or line.startswith(("*", "#", ":", ";", "|", "!")):
            continue
        if len(line.split()) >= WIKI_MIN_LINE_WORDS:
            keep.append(re.sub(r"\s+", " ", line))
    return "\n\n".join(keep)


def _wiki_rows():
    from gensim.corpora.wikicorpus import extract_pages

    path = _gensim_data("enwiki-*shortened*.bz2")
    with bz2.open(path) as f:
        # extract_pages yields (title, markup, page id) for main-namespace pages.
        for title, markup, _page_id in extract_pages(f):
            if markup.lstrip().upper().startswith("#REDIRECT"):
                continue
            text = clean_wikitext(markup)
            if len(text.split()) >= WIKI_MIN_WORDS:
                yield {"title": title, "text": f"{title}\n\n{text}"}


def _corpus_tag(source: str) -> str:
    if source.startswith("embedded:"):
        return source.split(":", 1)[1]
    return Path(source).stem if Path(source).exists() else source


def _local_files(path: Path) -> tuple[str, list[str]]:
    files = sorted(path.glob("*")) if path.is_dir() else [path]
    kinds = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}
    files = [f for f in files if f.suffix in kinds]
    if not files:
        raise CorpusError(f"corpus {path}: no .jsonl, .json or .parquet file")
    builders = {kinds[f.suffix] for f in files}
    if len(builders) > 1:
        raise CorpusError(f"corpus {path}: mixes JSON and Parquet files")
    return builders.pop(), [str(f) for f in files]


@functools.lru_cache(maxsize=4)
def load_corpus(cfg: CorpusConfig):
    """The corpus as a ``datasets`` Dataset (IterableDataset when streaming); None for
    ``none``. Cached per config, since loading the wiki dump takes a few seconds."""
    import datasets

    src = cfg.source
    if src == NONE:
        return None
    if src in EMBEDDED:
        gen = _news_rows if src == "embedded:news" else _wiki_rows
        # from_list keeps the few hundred documents in memory: no Arrow cache folder.
        ds = datasets.Dataset.from_list(list(gen()))
        return ds.rename_column("text", cfg.text_field) if cfg.text_field != "text" else ds
    if src.startswith("embedded:"):
        raise CorpusError(f"corpus {src!r}: unknown embedded corpus (known: {', '.join(EMBEDDED)})")
    path = Path(src)
    try:
        if path.exists():
            builder, files = _local_files(path)
            ds = datasets.load_dataset(builder, data_files=files, split="train",
                                       streaming=cfg.streaming)
        elif src.endswith((".jsonl", ".json", ".parquet")) or src.startswith((".", "/", "~")):
            raise CorpusError(f"corpus {src}: file not found")
        else:
            ds = datasets.load_dataset(src, split="train", streaming=cfg.streaming)
    except CorpusError:
        raise
    except (FileNotFoundError, ConnectionError, ValueError, OSError,
            datasets.exceptions.DatasetNotFoundError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CorpusError(f"corpus {src}: cannot load ({first[:200]})") from None
    fields = list(ds.column_names or []) if ds.column_names is not None else None
    if fields is not None and cfg.text_field not in fields:
        raise CorpusError(f"corpus {src}: no field {cfg.text_field!r} "
                          f"(fields: {', '.join(fields)}); set corpus.text_field")
    return ds


def truncate_words(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text``, keeping its line breaks."""
    end = 0
    for i, m in enumerate(re.finditer(r"\S+", text)):
        end = m.end()
        if i + 1 == max_words:
            break
    return text[:end].strip()


# -- sampling ------------------------------------------------------------------------


def _use_counts(store: Store, run: str, generation: int) -> dict[str, int]:
    # Other generations only: a rerun of this generation must draw the same sample.
    return queries.document_use_counts(store, run, generation)


def _rng(seed: int, generation: int) -> np.random.Generator:
    return np.random.default_rng(derive("corpus", seed, generation, bits=63))


def _sample_indexed(ds, cfg: CorpusConfig, used: dict[str, int], n: int,
                    rng: np.random.Generator) -> list[Document]:
    tag = _corpus_tag(cfg.source)
    counts = np.zeros(len(ds), dtype=np.int64)
    for doc_id, uses in used.items():
        t, _, idx = doc_id.rpartition(":")
        if t == tag and idx.isdigit() and int(idx) < len(ds):
            counts[int(idx)] = uses
    order = rng.permutation(len(ds))
    # Least-used documents first (stable, so the seeded order decides among equals): no
    # repeats until every document has been used, then a new pass over the least used.
    order = order[np.argsort(counts[order], kind="stable")]
    out: list[Document] = []
    for idx in order:
        text = ds[int(idx)][cfg.text_field]
        if not isinstance(text, str) or not text.strip():
            continue
        out.append(Document(f"{tag}:{int(idx)}", cfg.source, truncate_words(text, cfg.max_words)))
        if len(out) == n:
            break
    return out


def _sample_streamed(ds, cfg: CorpusConfig, used: dict[str, int], n: int,
                     rng: np.random.Generator) -> list[Document]:
    tag = _corpus_tag(cfg.source)
    ds = ds.shuffle(seed=int(rng.integers(2**31)), buffer_size=STREAM_BUFFER)
    out: list[Document] = []
    for row in ds:
        text = row.get(cfg.text_field)
        if text is None and cfg.text_field not in row:
            raise CorpusError(f"corpus {cfg.source}: no field {cfg.text_field!r} "
                              f"(fields: {', '.join(row)}); set corpus.text_field")
        if not isinstance(text, str) or not text.strip():
            continue
        doc_id = f"{tag}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"
        if doc_id in used or any(d.doc_id == doc_id for d in out):
            continue
        out.append(Document(doc_id, cfg.source, truncate_words(text, cfg.max_words)))
        if len(out) == n:
            break
    return out


def sample_documents(store: Store, run: str, generation: int, n: int, seed: int,
                     cfg: CorpusConfig | None = None) -> list[Document]:
    """Draw ``n`` documents for one generation and record them in ``documents``.

    Seeded by ``(seed, generation)``; documents used by the run's other generations are
    not drawn again until the corpus is exhausted. Rerunning a generation replaces its
    rows with the same sample. The ``none`` source returns [] (and records nothing).
    """
    cfg = cfg or CorpusConfig()
    ds = load_corpus(cfg)
    if ds is None:
        docs: list[Document] = []
    else:
        used = _use_counts(store, run, generation)
        rng = _rng(seed, generation)
        import datasets

        if isinstance(ds, datasets.IterableDataset):
            docs = _sample_streamed(ds, cfg, used, n, rng)
        else:
            docs = _sample_indexed(ds, cfg, used, n, rng)
        if len(docs) < n:
            raise CorpusError(f"corpus {cfg.source}: only {len(docs)} new non-empty "
                              f"documents left, {n} asked")
    store.replace_rows("documents", {"run": run, "generation": generation},
                       [{"run": run, "generation": generation, "doc_idx": i,
                         "doc_id": d.doc_id, "source": d.source, "text": d.text}
                        for i, d in enumerate(docs)])
    return docs


def draw_documents(n: int, seed: int, cfg: CorpusConfig | None = None) -> list[Document]:
    """``n`` documents drawn by ``seed`` alone, recording nothing (for the warm start's
    pairs, which belong to no generation); [] for the ``none`` source."""
    cfg = cfg or CorpusConfig()
    ds = load_corpus(cfg)
    if ds is None:
        return []
    import datasets

    rng = _rng(seed, 0)
    if isinstance(ds, datasets.IterableDataset):
        return _sample_streamed(ds, cfg, {}, n, rng)
    return _sample_indexed(ds, cfg, {}, n, rng)


__all__ = ["Document", "CorpusError", "load_corpus", "sample_documents", "truncate_words",
           "clean_wikitext"]


def sample_stage(rt: StageRuntime, generation: int) -> Documents:
    """The flow's first stage: this generation's grounding documents (their ids)."""
    if rt.cfg.designer.mode == "fixed":
        return Documents()  # the fixed-environment baseline designs nothing, so grounds nothing
    n = rt.cfg.designer.designs_per_generation
    docs = sample_documents(rt.store, rt.run, generation, n, rt.seed(generation),
                            rt.cfg.corpus)
    return Documents(doc_ids=[d.doc_id for d in docs])


def documents_of(store: Store, run: str, generation: int) -> list[Document]:
    """The documents sampled for a generation, in sampling order."""
    return [Document(r["doc_id"], r["source"], r["text"])
            for r in queries.documents_of(store, run, generation)]
