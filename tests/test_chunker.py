from waypost.ingest.chunker import Chunker, count_tokens, split_sections, split_sentences

TEXT = """# Guide

Intro sentence one. Dr. Smith wrote e.g. this line in the U.S. too. Short one!

## Install

Run the installer. It takes a minute? Then start the app.

## Use

""" + " ".join(f"Sentence number {i} says something useful about topic {i}." for i in range(40))


def test_sentences_respect_abbreviations() -> None:
    text = "Dr. Smith arrived. He met Mr. J. Doe, e.g. at noon! Then left."
    spans = [text[s.start : s.end] for s in split_sentences(text)]
    assert spans == ["Dr. Smith arrived.", "He met Mr. J. Doe, e.g. at noon!", "Then left."]


def test_sections_follow_heading_paths() -> None:
    paths = [s.path for s in split_sections(TEXT)]
    assert paths[:3] == [("Guide",), ("Guide", "Install"), ("Guide", "Use")]


def test_chunks_are_exact_spans_of_whole_sentences_within_budget() -> None:
    chunker = Chunker(max_tokens=40)
    chunks = chunker.chunk("doc", TEXT)
    sentence_ends = {s.end for s in split_sentences(TEXT)}
    sentence_starts = {s.start for s in split_sentences(TEXT)}
    for c in chunks:
        assert TEXT[c.start : c.end] == c.text
        assert c.start in sentence_starts and c.end in sentence_ends, "a sentence was split"
        assert c.token_count == sum(count_tokens(TEXT[s.start : s.end]) for s in split_sentences(TEXT, c.start, c.end))
        assert c.token_count <= 40
        assert not c.text.startswith("#")
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert {c.section for c in chunks} == {("Guide",), ("Guide", "Install"), ("Guide", "Use")}
    # Sections never share a chunk.
    install = [c for c in chunks if c.section == ("Guide", "Install")]
    assert len(install) == 1 and install[0].text.startswith("Run the installer")


def test_chunks_are_balanced_not_ragged() -> None:
    chunks = Chunker(max_tokens=100).chunk("doc", " ".join(f"Word {i} is here." for i in range(60)))
    sizes = [c.token_count for c in chunks]
    assert max(sizes) - min(sizes) <= 10, sizes


def test_overlong_sentence_is_cut_at_words_only() -> None:
    text = "word " * 500
    chunks = Chunker(max_tokens=50).chunk("doc", text.strip())
    assert all(c.token_count <= 50 for c in chunks)
    assert " ".join(c.text for c in chunks) == text.strip()


def test_empty_text_gives_no_chunks() -> None:
    assert Chunker().chunk("doc", "   \n\n ") == []
