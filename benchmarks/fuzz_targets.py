"""Fuzz targets shared by tests/test_fuzz.py (a few thousand inputs) and benchmarks/bench_fuzz.py (100,000+).

A target is a hypothesis strategy of inputs and a function that feeds one input to waypost. The only
exceptions allowed out of waypost are ``WaypostError`` subclasses (a refusal that names the problem);
anything else is a crash, and a broken invariant (chunks that are not exact spans of the text, a
parsed filter that does not round-trip) raises ``InvariantViolation``, also a crash.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import And, Condition, Filter, from_obj, parse_filter, parse_filter_json
from waypost.ingest.chunker import CHARS_PER_TOKEN, Chunker, count_tokens, split_sections
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.post.passages import PassageConfig
from waypost.types import Document

CHEAP_STRATEGIES = ("bm25", "dense", "hybrid", "metadata")
EXPENSIVE_STRATEGIES = (
    "auto-merge",
    "small-to-big",
    "raptor-collapsed",
    "raptor-traversal",
    "doc-summary",
    "hipporag",
    "graph-local",
    "graph-global",
    "lightrag",
    "multihop",
)
BAD_STRATEGIES = ("", "web", "nope", "BM25", "hybrid ")


class InvariantViolation(Exception):
    """waypost answered without an error, but the answer breaks a property it promises."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


@dataclass(frozen=True)
class Target:
    name: str
    inputs: st.SearchStrategy[Any]
    feed: Callable[[Any], None]  # may raise WaypostError; anything else is a crash
    time_limit: float  # seconds one input may take before it counts as a hang


def run_input(target: Target, value: Any) -> None:
    """Feed one input; a ``WaypostError`` is an accepted answer, everything else propagates."""
    try:
        target.feed(value)
    except WaypostError:
        pass


# -- text building blocks -------------------------------------------------------------------------
WORDS = (
    "the movie documentary India Spain after before between and or more than under at least minutes seasons "
    "released from in since until 2015 2019 2021 March May 2021-03 2020-01-15 TV-MA PG-13 R movies shows tv "
    "comedies dramas thriller murder family horror Japan United States with about kids "
    "e.g. Dr. U.S. i.e. etc. 3.5 -1 1e9 NaN inf"
).split()
ODD = ["\x00", "\ufeff", "\u200b", "\r", "\r\n", "\t", "\x0b", "\x1c", "\u2028", "\ud800", "\udfff", "é", "́", "👩‍👩‍👧"]
SCRIPTS = ["日本語の文章です。", "中文句子。", "ภาษาไทยไม่มีช่องว่าง ประโยคที่สอง", "ខ្មែរ", "한국어 문장.", "Привет, мир!"]

word = st.one_of(st.sampled_from(WORDS), st.text(max_size=12))
phrase = st.lists(word, max_size=12).map(" ".join)
sentence = st.builds(
    lambda words, end: " ".join(words) + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=40),
    st.sampled_from([".", "!", "?", "", '."', ".)", "。", "\n\n"]),
)
long_run = st.builds(
    lambda unit, n: unit * n, st.sampled_from(["a", "ab1", "日", "ก", "x-", "é", "👍🏽"]), st.integers(1, 3000)
)
heading = st.builds(lambda level, title: "\n" + "#" * level + " " + title + "\n", st.integers(1, 7), phrase)
text_piece = st.one_of(
    sentence,
    sentence,
    heading,
    long_run,
    st.sampled_from(ODD + SCRIPTS + ["\n\n", " ", "\n", "# ", "#", "  \n \n"]),
    st.text(max_size=30),
)
document_text = st.lists(text_piece, max_size=30).map(" ".join) | st.text(max_size=300)


# -- filters --------------------------------------------------------------------------------------
def filter_to_obj(flt: Filter) -> dict[str, Any]:
    if isinstance(flt, Condition):
        return {"field": flt.field, "op": flt.op.value, "value": flt.value}
    return {"and" if isinstance(flt, And) else "or": [filter_to_obj(item) for item in flt.items]}


def check_round_trip(flt: Filter | None) -> None:
    if flt is None:
        return
    str(flt)
    obj = filter_to_obj(flt)
    check(from_obj(obj) == flt, f"{flt} does not survive from_obj: {from_obj(obj)}")
    again = parse_filter_json(json.dumps(obj))
    check(again == flt, f"{flt} does not survive JSON: {again}")


FIELDS = ["year", "release_year", "type", "countries", "rating", "date_added", "a.b", "_x", "x1", "in", "AND"]
field_name = st.sampled_from(FIELDS) | st.from_regex(r"[A-Za-z_][\w.]{0,8}", fullmatch=True) | st.text(max_size=6)
number_text = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats().map(repr),
    st.sampled_from(["1e999", "-0", "0x10", "1_000", "nan", "Infinity", "2021", "1.5e-300", "٣", "9" * 5000]),
)
date_text = st.sampled_from(
    ["2021-03-01", "2021-03", "March 2021", "4 March 2021", "2021/13/45", "2021-02-30", "Mar 2021", "0000-00-00"]
)
quoted = st.builds(lambda q, s: q + s + q, st.sampled_from(["'", '"', "`"]), st.text(max_size=10))
clause_value = st.one_of(
    number_text,
    date_text,
    quoted,
    st.text(max_size=15),
    st.lists(st.one_of(number_text, quoted, st.text(max_size=6)), max_size=5).map(",".join),
)
clause = st.one_of(
    st.builds(
        lambda f, sp1, op, sp2, v: f + sp1 + op + sp2 + v,
        field_name,
        st.sampled_from(["", " ", "  "]),
        st.sampled_from(["=", ">", ">=", "<", "<=", "!=", "in", "IN", "==", "=>", "<>", "~"]),
        st.sampled_from(["", " ", "\t"]),
        clause_value,
    ),
    st.text(max_size=40),
)
filter_clauses = st.lists(clause, max_size=4)


def feed_filter_clauses(clauses: list[str]) -> None:
    check_round_trip(parse_filter(clauses))


OP_NAMES = ["eq", "in", "gt", "gte", "lt", "lte", "$gte", "GT", "ne", "", "field"]
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(FIELDS + OP_NAMES + ["2021-03", "March 2021", "2021"]),
)
json_key = st.sampled_from(["and", "or", "field", "op", "value", *OP_NAMES, *FIELDS]) | st.text(max_size=6)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_key, inner, max_size=4),
    max_leaves=20,
)
condition_obj = st.one_of(
    st.fixed_dictionaries({"field": field_name, "op": st.sampled_from(OP_NAMES), "value": json_value}),
    st.dictionaries(field_name, json_scalar | st.lists(json_scalar, max_size=3), min_size=1, max_size=3),
    st.dictionaries(
        field_name, st.dictionaries(st.sampled_from(OP_NAMES), json_scalar, max_size=2), min_size=1, max_size=2
    ),
)
filter_obj = st.recursive(
    condition_obj,
    lambda inner: st.dictionaries(st.sampled_from(["and", "or"]), st.lists(inner, max_size=4), min_size=1, max_size=1),
    max_leaves=12,
)
deep_nesting = st.builds(
    lambda opener, closer, depth: opener * depth + '{"x": 1}' + closer * depth,
    st.sampled_from(['{"and": [', '{"or": [', "["]),
    st.sampled_from(["]}", "]"]),
    st.integers(1, 5000),
)
long_number = st.builds(lambda digits, field: f'{{"{field}": {"7" * digits}}}', st.integers(4000, 6000), field_name)
filter_json_text = st.one_of(
    filter_obj.map(json.dumps),
    long_number,
    json_value.map(json.dumps),
    st.text(max_size=60),
    deep_nesting,
)


def feed_filter_json(text: str) -> None:
    check_round_trip(parse_filter_json(text))


# -- a small real collection ----------------------------------------------------------------------
CATALOGUE: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Harbour Lights",
        "A lighthouse keeper in Norway finds a stranded whale and a family secret.",
        {
            "type": "Movie",
            "countries": ["Norway"],
            "release_year": 2019,
            "rating": "PG-13",
            "categories": ["Dramas", "International Movies"],
            "date_added": "March 4, 2021",
            "duration_minutes": 104,
        },
    ),
    (
        "Spice Route",
        "Street food cooks from Mumbai to Delhi compete for a place in a famous kitchen.",
        {
            "type": "TV Show",
            "countries": ["India"],
            "release_year": 2021,
            "rating": "TV-14",
            "categories": ["Reality TV", "International TV Shows"],
            "date_added": "2021-07-15",
            "seasons": 2,
        },
    ),
    (
        "The Quiet Orbit",
        "An astronaut alone on a failing station records messages to a daughter she never met.",
        {
            "type": "Movie",
            "countries": ["United States"],
            "release_year": 2016,
            "rating": "R",
            "categories": ["Sci-Fi & Fantasy", "Dramas"],
            "date_added": "June 1, 2019",
            "duration_minutes": 121,
        },
    ),
    (
        "Midnight in Seville",
        "A flamenco dancer investigates the murder of her teacher during the April fair.",
        {
            "type": "Movie",
            "countries": ["Spain"],
            "release_year": 2020,
            "rating": "TV-MA",
            "categories": ["Thrillers", "International Movies"],
            "date_added": "2020-11-20",
            "duration_minutes": 97,
        },
    ),
    (
        "Little Inventors",
        "Kids build machines from scrap and learn how engines, pumps and circuits work.",
        {
            "type": "TV Show",
            "countries": ["United Kingdom", "Canada"],
            "release_year": 2018,
            "rating": "TV-Y7",
            "categories": ["Kids' TV"],
            "date_added": "January 9, 2020",
            "seasons": 3,
        },
    ),
    (
        "Salt and Stone",
        "A documentary about the salt miners of the Andes and the families who depend on them.",
        {
            "type": "Movie",
            "countries": ["Bolivia", "Peru"],
            "release_year": 2015,
            "rating": "TV-PG",
            "categories": ["Documentaries"],
            "date_added": "2018-05",
            "duration_minutes": 88,
        },
    ),
    (
        "Tokyo Night Shift",
        "Four strangers share a taxi through Tokyo on the last night before the Olympics.",
        {
            "type": "Movie",
            "countries": ["Japan"],
            "release_year": 2021,
            "rating": "TV-14",
            "categories": ["Comedies", "International Movies"],
            "date_added": "September 30, 2021",
            "duration_minutes": 112,
        },
    ),
    (
        "House of Echoes",
        "A family moves into an old house where every room repeats a different year.",
        {
            "type": "TV Show",
            "countries": ["United States"],
            "release_year": 2022,
            "rating": "TV-MA",
            "categories": ["TV Horror", "TV Mysteries"],
            "date_added": "2022-10-31",
            "seasons": 1,
        },
    ),
    (
        "Northern Pitch",
        "A women's football team from a mining town reaches the national cup final.",
        {
            "type": "Movie",
            "countries": ["United Kingdom"],
            "release_year": 2017,
            "rating": "PG",
            "categories": ["Sports Movies", "Dramas"],
            "date_added": "April 2, 2018",
            "duration_minutes": 99,
        },
    ),
    (
        "Code of Silence",
        "Hackers in Berlin uncover a bank's plan to launder money through a charity.",
        {
            "type": "TV Show",
            "countries": ["Germany"],
            "release_year": 2019,
            "rating": "TV-MA",
            "categories": ["Crime TV Shows", "International TV Shows"],
            "date_added": "2019-12-06",
            "seasons": 2,
        },
    ),
]


def catalogue_documents() -> list[Document]:
    docs = [
        Document(id=f"t{i}", text=text, title=title, metadata=dict(meta))
        for i, (title, text, meta) in enumerate(CATALOGUE)
    ]
    samples = Path(__file__).resolve().parents[1] / "src" / "waypost" / "samples"
    for path in sorted(samples.glob("*.md")):  # multi-chunk documents with sections
        docs.append(Document(id=path.name, text=path.read_text(encoding="utf-8"), title=path.stem))
    return docs


def open_collection(store_dir: Path, embedder: Any = None) -> tuple[Engine, Collection]:
    """A small real collection (metadata, sections, several chunks per document) in a real store."""
    engine = Engine(store_dir, EngineConfig(chunk_tokens=64, background_index_work=False))
    if embedder is not None:
        engine.register_embedder(embedder)
    collection = engine.collection("fuzz", create=True)
    collection.add(catalogue_documents())
    return engine, collection


VALUE_WORDS = sorted(
    {
        str(v)
        for _t, _x, meta in CATALOGUE
        for value in meta.values()
        for v in (value if isinstance(value, list) else [value])
    }
)
query_word = st.one_of(st.sampled_from(WORDS), st.sampled_from(VALUE_WORDS), st.text(max_size=10))
query_text = st.one_of(
    st.lists(query_word, max_size=14).map(" ".join),
    st.text(max_size=80),
    st.sampled_from(["", " ", "\n\t", "\ud800", "\x00", "?" * 300, "a" * 5000, "日本" * 400]),
)


def extractor_target(collection: Collection) -> Target:
    extractor: FilterExtractor = collection.extractor()
    fields = set(extractor.index.fields)

    def feed(query: str) -> None:
        found = extractor.extract(query)
        check(isinstance(found.semantic_query, str), "semantic query is not text")
        for cond in found.conditions:
            check(cond.field in fields, f"{query!r}: condition on unknown field {cond.field!r}")
        if found.filter is not None:
            check_round_trip(found.filter)

    return Target("extractor", query_text, feed, 2.0)


def _query_filter(fields: list[str], values: list[str]) -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries(
        {
            "field": st.sampled_from([*fields, "missing", ""]),
            "op": st.sampled_from(["eq", "in", "gt", "gte", "lt", "lte"]),
            "value": st.one_of(
                st.sampled_from(values),
                st.integers(-5, 3000),
                st.floats(allow_nan=False),
                date_text,
                st.lists(st.sampled_from(values) | st.integers(0, 2030), min_size=1, max_size=3),
                json_scalar,
            ),
        }
    )
    tree = st.recursive(
        leaf,
        lambda inner: st.dictionaries(
            st.sampled_from(["and", "or"]), st.lists(inner, max_size=3), min_size=1, max_size=1
        ),
        max_leaves=5,
    )
    return st.none() | tree


def query_target(collection: Collection, strategies: tuple[str, ...], name: str, time_limit: float) -> Target:
    fields = sorted({k for _t, _x, meta in CATALOGUE for k in meta})
    inputs = st.fixed_dictionaries(
        {
            "query": query_text,
            # mostly valid requests, so most inputs reach the retrievers; a quarter of them bad on purpose
            "k": st.one_of(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.sampled_from([-1, 0, 10**6])),
            "strategy": st.one_of(*[st.sampled_from(strategies)] * 3, st.sampled_from(BAD_STRATEGIES)),
            "filters": _query_filter(fields, VALUE_WORDS),
            "passages": st.booleans() if name != "query" else st.just(False),
        }
    )

    def feed(value: dict[str, Any]) -> None:
        filters = from_obj(value["filters"]) if value["filters"] is not None else None
        result = collection.retrieve(
            value["query"],
            value["strategy"],
            value["k"],
            filters=filters,
            passages=PassageConfig() if value["passages"] else None,
        )
        check(len(result.hits) <= value["k"], f"{len(result.hits)} hits for k={value['k']}")

    return Target(name, inputs, feed, time_limit)


# -- chunker --------------------------------------------------------------------------------------
# shapes past the ordinary: whitespace runs (no tokens, many characters), one letter with thousands of
# combining marks (one grapheme cluster over the budget), long titles
whitespace_run = st.builds(
    lambda ws, n: ws * n, st.sampled_from([" ", "\n", "\t", " \n", "\u3000"]), st.integers(1, 5000)
)
combining_run = st.builds(
    lambda base, mark, n: base + mark * n,
    st.sampled_from(["e", "a", "日", "", "1"]),
    st.sampled_from(["\u0301", "\u0308\u0323", "\u200d", "\ufe0f"]),
    st.integers(1, 3000),
)
chunker_text = st.lists(st.one_of(text_piece, whitespace_run, combining_run), max_size=30).map(" ".join) | document_text
chunker_title = st.text(max_size=50) | st.integers(0, 400).map(lambda n: " ".join(["title"] * n))
chunker_input = st.tuples(
    chunker_text, st.one_of(st.integers(16, 300), st.sampled_from([16, 17, 64, 200, 0, 15, -1])), chunker_title
)


def feed_chunker(value: tuple[str, int, str]) -> None:
    text, budget, title = value
    chunks = Chunker(budget).chunk("doc", text, title)
    covered = bytearray(len(text))
    previous_end = 0
    for i, chunk in enumerate(chunks):
        check(chunk.index == i, f"chunk {i} has index {chunk.index}")
        check(chunk.text == text[chunk.start : chunk.end], f"chunk {i} is not the span {chunk.start}:{chunk.end}")
        check(bool(chunk.text.strip()), f"chunk {i} is blank")
        check(chunk.start >= previous_end, f"chunk {i} overlaps the one before")
        check(count_tokens(chunk.text) <= budget, f"chunk {i} holds {count_tokens(chunk.text)} tokens > {budget}")
        check(chunk.token_count <= budget, f"chunk {i} claims {chunk.token_count} tokens > {budget}")
        check(len(chunk.text) <= budget * CHARS_PER_TOKEN, f"chunk {i} holds {len(chunk.text)} characters")
        previous_end = chunk.end
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    for section in split_sections(text):  # all body text (headings become section paths) is in a chunk
        for pos in range(section.start, section.end):
            check(covered[pos] or text[pos].isspace(), f"character {pos} ({text[pos]!r}) is in no chunk")


# -- loaders --------------------------------------------------------------------------------------
def _corrupt(raw: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    data = bytearray(raw)
    for kind, pos, blob in edits:
        if not data:
            break
        at = pos % len(data)
        if kind == 0:  # overwrite
            data[at : at + len(blob)] = blob
        elif kind == 1:  # insert
            data[at:at] = blob
        elif kind == 2:  # delete a stretch
            del data[at : at + 1 + len(blob) * 8]
        elif kind == 3:  # truncate
            del data[at:]
        else:  # duplicate a stretch
            data[at:at] = data[at : at + 64]
    return bytes(data)


edits = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2**31), st.binary(max_size=8)), max_size=6)
bad_utf8 = st.builds(lambda text, e: _corrupt(text.encode("utf-8", "surrogatepass"), e), document_text, edits)
huge_line = st.builds(
    lambda unit, n, newline: (unit * n + newline).encode("utf-8", "surrogatepass"),
    st.text(min_size=1, max_size=4),
    st.integers(1, 200_000),
    st.sampled_from(["", "\n", "\r"]),
)
common_bytes = st.one_of(
    st.binary(max_size=300),
    bad_utf8,
    huge_line,
    st.sampled_from([b"", b"\xef\xbb\xbf", b"\x00", b" \n\t", b"\xff\xfe", b"\xed\xa0\x80"]),
)


def _encoded(text: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    return text.map(lambda s: s.encode("utf-8", "surrogatepass"))


TAGS = [
    "p",
    "div",
    "li",
    "ul",
    "tr",
    "td",
    "table",
    "br",
    "section",
    "article",
    "span",
    "b",
    "h1",
    "h2",
    "h6",
    "script",
    "style",
    "noscript",
    "nav",
    "footer",
    "template",
    "title",
    "body",
    "head",
    "html",
    "pre",
    "a",
]


def _tag(name: str, attrs: str, body: str, close: bool) -> str:
    return f"<{name}{attrs}>{body}" + (f"</{name}>" if close else "")


html_text = st.recursive(
    st.one_of(
        phrase,
        st.sampled_from(
            [
                "&amp;",
                "&#0;",
                "&#xD800;",
                "&nbsp;",
                "<!--",
                "-->",
                "<![CDATA[",
                "<?x?>",
                "<",
                ">",
                "&",
                "<!DOCTYPE html>",
            ]
        ),
    ),
    lambda inner: st.builds(
        _tag,
        st.sampled_from(TAGS),
        st.sampled_from(["", ' class="x"', " a=b c", ' title="<p>"', " /", ' x="']),
        st.lists(inner, max_size=4).map("".join),
        st.booleans(),
    ),
    max_leaves=30,
)
deep_html = st.builds(
    lambda tag, depth, close, body: f"<{tag}>" * depth + body + (f"</{tag}>" * depth if close else ""),
    st.sampled_from(["div", "p", "b", "li", "h1", "span", "table"]),
    st.integers(1, 20_000),
    st.booleans(),
    phrase,
)
html_bytes = st.one_of(common_bytes, _encoded(html_text), _encoded(deep_html))

_SEED_PDFS: list[bytes] = []


def seed_pdfs() -> list[bytes]:
    """A few small, valid PDFs made with fpdf2, to be mutated."""
    if not _SEED_PDFS:
        from fpdf import FPDF

        for pages, title, compress in [(1, "", True), (2, "Fuzz title", False), (3, "Ünïcode", True), (0, "", False)]:
            pdf = FPDF()
            pdf.set_compression(compress)
            if title:
                pdf.set_title(title)
            pdf.set_font("Helvetica", size=12)
            for page in range(pages):
                pdf.add_page()
                pdf.multi_cell(0, 10, f"Page {page}. Waypost reads the text layer of PDF files. " * (page + 1))
            if pages == 0:
                pdf.add_page()  # a page with no text layer
            _SEED_PDFS.append(bytes(pdf.output()))
    return _SEED_PDFS


pdf_bytes = st.one_of(
    st.builds(lambda i, e: _corrupt(seed_pdfs()[i % len(seed_pdfs())], e), st.integers(0, 3), edits),
    st.builds(lambda i, n: seed_pdfs()[i % 4][: n % len(seed_pdfs()[i % 4])], st.integers(0, 3), st.integers(0, 5000)),
    st.binary(max_size=200).map(lambda b: b"%PDF-1.4\n" + b),
    common_bytes,
)

jsonl_field = st.sampled_from(["_id", "id", "doc_id", "text", "content", "body", "title", "name", "metadata", "x", ""])
jsonl_record = st.dictionaries(jsonl_field, json_value, max_size=6)
jsonl_line = st.one_of(
    jsonl_record.map(lambda r: json.dumps(r, allow_nan=True)),
    jsonl_record.map(lambda r: json.dumps(r, ensure_ascii=False)),
    st.builds(lambda t, m: json.dumps({"text": t, "metadata": m}), st.text(max_size=20), json_value),
    st.sampled_from(
        [
            '{"text": 1e999}',
            '{"text": "x", "n": NaN}',
            "[]",
            "null",
            '"x"',
            "{",
            '{"text": "\\ud800"}',
            '{"text": "a", "_id": {"a": 1}}',
            '{"text": "", "title": ""}',
            '{"content": "x", "id": 0}',
        ]
    ),
    st.text(max_size=30),
)
jsonl_bytes = st.one_of(
    _encoded(st.lists(jsonl_line | long_number | deep_nesting, max_size=8).map("\n".join)),
    common_bytes,
)

csv_cell = st.one_of(
    st.text(max_size=12),
    st.sampled_from(['"', '""', '"a"b', 'a"b', ",", "\n", "\r", "\r\n", "nan", "inf", "1e999", "-0", " 3 ", "\x00"]),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", '"', ","]), st.integers(100_000, 140_000)),
)
csv_row = st.lists(csv_cell, max_size=6).map(",".join)
csv_header = st.lists(
    st.sampled_from(["text", "title", "id", "_id", "year", "tags", "", "text", '"text"', "metadata"]), max_size=6
).map(",".join)
csv_bytes = st.one_of(
    _encoded(
        st.builds(
            lambda h, rows, nl: nl.join([h, *rows]),
            csv_header,
            st.lists(csv_row, max_size=6),
            st.sampled_from(["\n", "\r\n", "\r"]),
        )
    ),
    common_bytes,
)


def loader_target(suffix: str, inputs: st.SearchStrategy[bytes], time_limit: float = 5.0) -> Target:
    workdir = Path(tempfile.mkdtemp(prefix=f"waypost-fuzz-{suffix}-"))
    path = workdir / f"input.{suffix}"

    def feed(raw: bytes) -> None:
        path.write_bytes(raw)
        for item in load_path(path, workdir):
            if isinstance(item, LoadFailure):
                check(isinstance(item.error, str) and bool(item.error), "a load failure without a reason")
                continue
            check(isinstance(item.text, str) and isinstance(item.title, str), "document text or title not text")
            check(isinstance(item.id, str) and bool(item.id), f"bad document id {item.id!r}")
            check(isinstance(item.metadata, dict), "metadata is not a mapping")

    return Target(f"loader-{suffix}", inputs, feed, time_limit)


def offline_targets() -> list[Target]:
    """Targets that need no model: filters, chunker, loaders."""
    logging.getLogger("pypdf").setLevel(logging.CRITICAL)  # mutated PDFs make pypdf warn on every input
    text_bytes = st.one_of(common_bytes, _encoded(document_text))
    return [
        Target("filter-clauses", filter_clauses, feed_filter_clauses, 1.0),
        Target("filter-json", filter_json_text, feed_filter_json, 1.0),
        Target("chunker", chunker_input, feed_chunker, 2.0),
        loader_target("txt", text_bytes),
        loader_target("md", text_bytes),
        loader_target("html", html_bytes),
        loader_target("pdf", pdf_bytes),
        loader_target("jsonl", jsonl_bytes),
        loader_target("csv", csv_bytes),
    ]


def collection_targets(collection: Collection, warm: bool = True) -> list[Target]:
    """Targets over a real collection and model: the filter extractor and the query path. ``warm``: build the
    tree and graph first, so their one-off build is not timed as one input of the expensive target."""
    if warm:
        collection.tree().get()
        collection.graph().get()
    return [
        extractor_target(collection),
        query_target(collection, CHEAP_STRATEGIES, "query", 10.0),
        query_target(collection, EXPENSIVE_STRATEGIES, "query-expensive", 60.0),
    ]
