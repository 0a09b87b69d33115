"""No chunk exceeds its token budget however the text is shaped, and none is longer than the embedder reads."""

from __future__ import annotations

import random
import string
import time
from itertools import pairwise
from pathlib import Path

from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.graph.extract import SpacyExtractor
from waypost.graph.model import ChunkInput
from waypost.ingest.chunker import (
    CHARS_PER_TOKEN,
    WORD_CHARS,
    Chunker,
    TokenWindow,
    count_tokens,
    split_sections,
    token_window,
)
from waypost.types import MAX_CONTEXT_CHARS, Document, index_text


def _check_spans(text: str, chunks: list) -> None:  # type: ignore[type-arg]
    for c in chunks:
        assert text[c.start : c.end] == c.text


def _window(minilm: Embedder) -> TokenWindow:
    window = token_window(minilm)
    assert window is not None
    return window


def test_a_run_with_no_space_is_cut_to_the_budget() -> None:
    run = ("a1b2c3d4e5" * 500_000)[:5_000_000]  # 5 MB of letters and digits, no space
    started = time.perf_counter()
    chunks = Chunker(200).chunk("blob", f"Intro sentence. {run} Outro sentence.")
    assert time.perf_counter() - started < 20
    assert len(chunks) > 1000  # before: one 5,000,000-character chunk counted as one token
    assert max(c.token_count for c in chunks) <= 200
    assert max(len(c.text) for c in chunks) <= 200 * WORD_CHARS
    assert all(count_tokens(c.text) <= 200 for c in chunks)
    assert "".join(c.text for c in chunks if c.text not in ("Intro sentence.", "Outro sentence.")) == run


def test_a_run_of_non_latin_letters_is_cut_too() -> None:
    run = "жзийклмн" * 5_000  # 40,000 Cyrillic letters, no space
    text = f"Начало. {run}"
    chunks = Chunker(64).chunk("cyr", text)
    _check_spans(text, chunks)
    assert len(chunks) > 10 and all(count_tokens(c.text) <= 64 for c in chunks)


def test_count_tokens_is_unchanged_for_ordinary_words() -> None:
    assert count_tokens("The immunohistochemistry study, e.g. in 2020, found 12.5% more.") == 18  # as before
    assert count_tokens("electroencephalography") == 2  # 22 characters: over WORD_CHARS
    assert count_tokens("x" * WORD_CHARS) == 1
    assert count_tokens("x" * (WORD_CHARS + 1)) == 2
    assert count_tokens("x" * (10 * WORD_CHARS)) == 10


def _pseudo_words(n: int, seed: int = 7) -> str:
    """Sentences of rare, made-up words: one estimated token each, several word pieces each to the model."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(9, 14))) for _ in range(n)]
    return " ".join(" ".join(words[i : i + 12]) + "." for i in range(0, n, 12))


def test_chunks_fit_the_model_window(minilm: Embedder) -> None:
    window = _window(minilm)
    text = _pseudo_words(2000)
    title = "A title of some length for every chunk"
    plain = Chunker(200).chunk("doc", text)
    plain_counts = window.count_input_tokens([index_text(title, c.section, c.text) for c in plain])
    assert max(plain_counts) > window.max_input_tokens  # the estimate alone: the model would truncate these
    fitted = Chunker(200, window, index_text).chunk("doc", text, title)
    _check_spans(text, fitted)
    counts = window.count_input_tokens([index_text(title, c.section, c.text) for c in fitted])
    assert max(counts) <= window.max_input_tokens
    assert [c.index for c in fitted] == list(range(len(fitted)))
    assert all(c.token_count <= 200 for c in fitted)
    assert fitted[0].start == 0 and fitted[-1].end == len(text)


def test_one_huge_word_is_cut_between_graphemes_to_fit(minilm: Embedder) -> None:
    window = _window(minilm)
    word = "".join(random.Random(3).choice("bcdfghjklmnpqrstvwxz") for _ in range(99))  # ~99 word pieces
    text = " ".join([word] * 3)  # one "sentence" of three words, each near its own window
    fitted = Chunker(16, window, index_text).chunk("doc", text)
    _check_spans(text, fitted)
    counts = window.count_input_tokens([index_text("", c.section, c.text) for c in fitted])
    assert max(counts) <= window.max_input_tokens


def test_ordinary_english_is_chunked_as_before(minilm: Embedder) -> None:
    text = " ".join(f"Sentence number {i} says something useful about topic {i}." for i in range(300))
    assert [(c.start, c.end) for c in Chunker(200, _window(minilm), index_text).chunk("d", text)] == [
        (c.start, c.end) for c in Chunker(200).chunk("d", text)
    ]


def test_ingest_honours_the_window_and_keeps_spans(engine: Engine, minilm: Embedder) -> None:
    coll = engine.collection("window", create=True)
    text = _pseudo_words(600, seed=11)
    report = coll.add([Document("rare", text, title="Rare words")])
    assert report.added == 1 and not report.failures
    window = _window(minilm)
    rows = engine.store.snapshot(coll.name)
    assert len(rows.chunk_texts) > 1
    counts = window.count_input_tokens(rows.index_texts)
    assert max(counts) <= window.max_input_tokens
    stored = coll.get("rare")
    assert stored is not None
    hits = coll.retrieve(rows.chunk_texts[0][:60], strategy="bm25", k=50).hits
    assert all(stored.text[h.chunk.start : h.chunk.end] == h.chunk.text for h in hits)
    assert coll.add([Document("rare", text, title="Rare words")]).unchanged == 1  # re-adding is still a no-op


def test_a_graph_builds_over_a_megabyte_run(tmp_path: Path, minilm: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=1000))  # 60 chunks: one spaCy process
    engine.register_embedder(minilm)
    coll = engine.collection("blob-graph", create=True)
    run = ("q7w8e9r0t1" * 120_000)[:1_200_000]  # past spaCy's 1,000,000-character limit for one text
    report = coll.add([Document("blob", f"Marie Curie worked in Paris. {run}"), Document("p", "Paris is in France.")])
    assert report.added == 2 and not report.failures
    graph = coll.graph().get()  # before: one 1.2 MB chunk, and spaCy refused it, aborting the build
    assert graph is not None
    assert max(len(t) for t in engine.store.snapshot(coll.name).chunk_texts) == 1000 * WORD_CHARS
    engine.close()


def _check_order(text: str, chunks: list) -> None:  # type: ignore[type-arg]
    _check_spans(text, chunks)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(a.end <= b.start for a, b in pairwise(chunks))


def test_whitespace_runs_do_not_make_a_chunk_unbounded() -> None:
    """1,100,000 spaces between two sentences made one chunk of 1,100,108 characters (whitespace counts no
    tokens), and spaCy refused it; inside a sentence the same."""
    gap = " " * 1_100_000
    for text in (f"First sentence here. {gap}Second one.", f"words before{gap}words after", f"a\n\n{gap}\n\nb"):
        chunks = Chunker(64).chunk("d", text)
        _check_order(text, chunks)
        assert max(len(c.text) for c in chunks) <= 64 * CHARS_PER_TOKEN
        assert "".join(c.text for c in chunks).replace(" ", "") == text.replace(" ", "").replace("\n", "")


def test_spacy_extractor_cuts_a_text_past_its_length_limit() -> None:
    text = "Marie Curie worked in Paris. " + " " * 1_100_000 + "Paris is in France."
    [found] = SpacyExtractor().extract([ChunkInput(text, "Curie")])  # before: spaCy's E088 aborted the build
    assert any(e.name == "Marie Curie" for e in found.entities)


def test_a_title_past_the_window_does_not_shatter_the_text(minilm: Embedder) -> None:
    """A 300-word title is part of every chunk's input, so halving never got under the window: 2,000
    characters of text became 1,600 one-character chunks."""
    window = _window(minilm)
    title = " ".join(f"titleword{i}" for i in range(300))
    text = " ".join(f"Sentence {i} is about topic {i}." for i in range(80))[:2000]
    chunks = Chunker(200, window, index_text).chunk("d", text, title)
    _check_order(text, chunks)
    assert len(chunks) <= 10 and min(len(c.text) for c in chunks) > 50
    counts = window.count_input_tokens([index_text(title, c.section, c.text) for c in chunks])
    assert max(counts) <= window.max_input_tokens  # what is counted is what is embedded, and it fits
    headed = "# " + " ".join(f"heading{i}" for i in range(200)) + "\n" + text
    chunks = Chunker(200, window, index_text).chunk("d", headed, title)
    _check_order(headed, chunks)
    assert len(chunks) <= 10
    counts = window.count_input_tokens([index_text(title, c.section, c.text) for c in chunks])
    assert max(counts) <= window.max_input_tokens


def test_index_text_keeps_ordinary_titles_whole() -> None:
    assert index_text("A title", ("Intro", "Part"), "body") == "A title\nIntro\nPart\nbody"
    long = index_text("t" * 10_000, ("h" * 10_000,), "body")
    assert long.endswith("\nbody") and len(long) <= MAX_CONTEXT_CHARS + len("\nbody")


def test_one_grapheme_cluster_over_the_budget_is_cut_at_code_points() -> None:
    """An "e" and 200,000 combining accents are one grapheme cluster: it made one chunk of 200,001 tokens."""
    text = "e" + "\u0301" * 200_000
    chunks = Chunker(64).chunk("d", text)
    _check_order(text, chunks)
    assert "".join(c.text for c in chunks) == text
    assert max(c.token_count for c in chunks) <= 64
    assert all(count_tokens(c.text) <= 64 for c in chunks)


def test_halving_stops_when_an_uncapped_title_crowds_the_window(minilm: Embedder) -> None:
    """With a ``render`` that does not cap the title, halving stops once the chunk text alone fits."""
    title = " ".join(f"titleword{i}" for i in range(300))
    text = " ".join(f"Sentence {i} is about topic {i}." for i in range(80))[:2000]
    chunks = Chunker(200, _window(minilm)).chunk("d", text, title)
    _check_order(text, chunks)
    assert len(chunks) <= 10  # before: 1,600 one-character chunks


def test_a_chinese_title_and_heading_still_leave_chunks_within_the_window(minilm: Embedder) -> None:
    """In Chinese each character is one MiniLM token: an ordinary 85-character title and a 57-character heading
    take more than half the window, and halving must go on until every chunk fits (not stop and truncate)."""
    window = _window(minilm)
    rng = random.Random(5)
    hanzi = [chr(c) for c in range(0x4E00, 0x4E00 + 2000)]
    title = "".join(rng.choice(hanzi) for _ in range(85))
    heading = "".join(rng.choice(hanzi) for _ in range(57))
    body = "。".join("".join(rng.choice(hanzi) for _ in range(40)) for _ in range(60)) + "。"
    text = f"# {heading}\n\n{body}"
    chunks = Chunker(200, window, index_text).chunk("zh", text, title)
    _check_spans(text, chunks)
    counts = window.count_input_tokens([index_text(title, c.section, c.text) for c in chunks])
    assert max(counts) <= window.max_input_tokens


def test_a_heading_line_with_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    """The heading pattern once nested quantifiers over blanks: 3,700 spaces inside one heading line took 100 s
    of CPU (found by bench_fuzz). Closing hashes are still stripped as before."""
    text = "#  \t " + "ab1" * 1000 + " " * 3700 + "e" + "\u0301" * 800 + "\n\nBody text here."
    started = time.process_time()
    chunks = Chunker(112).chunk("d", text)
    assert time.process_time() - started < 2.0
    assert chunks and chunks[-1].text == "Body text here."
    assert [s.path for s in split_sections("## C# ##\nx\n# C#\ny")] == [("C#",), ("C",)]
