"""File loaders: .txt, .md, .html, .pdf, .jsonl (BEIR corpus too) and .csv. One bad file never stops a batch."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waypost.errors import InvalidDocumentError, LoaderError
from waypost.types import Document
from waypost.validation import check_document

MAX_FILE_BYTES = 64 * 1024 * 1024
TEXT_FIELDS = ("text", "content", "body", "abstract")
TITLE_FIELDS = ("title", "name", "heading")
ID_FIELDS = ("_id", "id", "doc_id", "document_id")


@dataclass(frozen=True)
class LoadFailure:
    source: str
    error: str


Loaded = Document | LoadFailure


def _wide_text(head: bytes) -> bool:
    """Text in UTF-16 or UTF-32 without a byte-order mark: mostly Latin letters, each padded with NUL bytes
    at the same places (a binary file has NULs too, but not in that pattern)."""
    if len(head) < 8 or b"\x00" not in head:
        return False
    for width in (2, 4):
        units = len(head) // width
        for spot in range(width):  # where the letter sits within its unit; the other bytes are NUL
            letters = head[spot : units * width : width]
            pads = (head[j : units * width : width] for j in range(width) if j != spot)
            printable = sum(1 for b in letters if 0x20 <= b < 0x7F or b in (9, 10, 13))
            if printable >= 0.9 * units and all(pad.count(0) >= 0.9 * units for pad in pads):
                return True
    return False


def _read_text(path: Path, max_bytes: int) -> str:
    size = path.stat().st_size
    if size == 0:
        raise LoaderError("file is empty")
    if size > max_bytes:
        raise LoaderError(f"file is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} MiB limit")
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or _wide_text(raw[:8192]):
        raise LoaderError("file is UTF-16 or UTF-32 text; save it as UTF-8")
    if b"\x00" in raw[:8192]:
        raise LoaderError("file looks binary (NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoaderError(f"not valid UTF-8 at byte {exc.start}") from exc
    if not text.strip():
        raise LoaderError("file has no text")
    return text


def _doc(doc_id: str, text: str, title: str, source: str, metadata: dict[str, Any] | None = None) -> Document:
    text = text.replace("\r\n", "\n")
    if not text.strip() and not title.strip():
        raise LoaderError(f"document {doc_id!r} has neither text nor title")
    try:  # lone surrogates become U+FFFD; NaN, Infinity and unstorable metadata refuse this document only
        return check_document(Document(id=doc_id, text=text, title=title, metadata=metadata or {}, source=source))
    except InvalidDocumentError as exc:
        raise LoaderError(str(exc)) from exc


def load_txt(path: Path, doc_id: str, max_bytes: int) -> Iterator[Document]:
    yield _doc(doc_id, _read_text(path, max_bytes), path.stem, str(path), {"format": "txt"})


def load_markdown(path: Path, doc_id: str, max_bytes: int) -> Iterator[Document]:
    text = _read_text(path, max_bytes)
    h1 = re.search(r"^#[ \t]+(.+?)[ \t]*#*$", text, re.MULTILINE)
    yield _doc(doc_id, text, h1.group(1).strip() if h1 else path.stem, str(path), {"format": "md"})


def load_html(path: Path, doc_id: str, max_bytes: int) -> Iterator[Document]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_read_text(path, max_bytes), "html.parser")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "template"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else path.stem
    text = re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+", " ", _html_text(soup.body or soup)))
    yield _doc(doc_id, text.strip(), title, str(path), {"format": "html"})


_BLOCK_BREAKS = {"p": "\n\n", "div": "\n\n", "section": "\n\n", "article": "\n\n", "li": "\n", "tr": "\n", "br": "\n"}
_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}


def _html_text(root: Any) -> str:
    """The text of ``root``: headings as markdown lines, a line break after each block. One pass with a
    stack: inserting break strings into the tree instead costs time quadratic in the nesting depth
    (20,000 nested divs took 18 s)."""
    from bs4.element import CData, NavigableString, Tag

    out: list[str] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):  # the break after a block, once its children are out
            out.append(node[0])
        elif isinstance(node, Tag):
            if node.name in _HEADINGS:
                out.append(f"\n\n{_HEADINGS[node.name]} {node.get_text(' ', strip=True)}\n\n")
                continue
            if node.name in _BLOCK_BREAKS:
                stack.append((_BLOCK_BREAKS[node.name],))
            stack.extend(reversed(node.contents))
        elif type(node) in (NavigableString, CData):  # not comments, doctypes or processing instructions
            out.append(str(node))
    return "".join(out)


def load_pdf(path: Path, doc_id: str, max_bytes: int) -> Iterator[Document]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    if path.stat().st_size > max_bytes:
        raise LoaderError(f"file is over the {max_bytes / 2**20:.0f} MiB limit")
    try:
        reader = PdfReader(str(path))
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata
        info_title = info.title if info and info.title else path.stem
    except PdfReadError as exc:
        raise LoaderError(f"cannot read PDF: {exc}") from exc
    except Exception as exc:  # a broken file makes pypdf raise almost anything (NotImplementedError, TypeError, ...)
        raise LoaderError(f"cannot read PDF: {type(exc).__name__}: {exc}") from exc
    text = "\n\n".join(p for p in pages if p)
    if not text.strip():
        raise LoaderError("PDF has no text layer (scanned images need OCR first)")
    yield _doc(doc_id, text, str(info_title), str(path), {"format": "pdf", "pages": len(pages)})


def _coerce(value: Any) -> Any:
    """CSV cells that look like finite numbers become numbers; everything else stays as it is."""
    if not isinstance(value, str):
        return value
    value = value.strip()
    try:
        return int(value)
    except ValueError:  # not an integer: maybe a float, else the text itself
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


def _record(row: dict[str, Any], fallback_id: str, source: str) -> Document:
    """A JSON/CSV record: id, title and text fields by common names; ``metadata`` or other fields become metadata."""
    doc_id = next((str(row[f]) for f in ID_FIELDS if row.get(f) not in (None, "")), fallback_id)
    text_field = next((f for f in TEXT_FIELDS if isinstance(row.get(f), str)), None)
    if text_field is None:
        raise LoaderError(f"record {doc_id!r} has none of the text fields {TEXT_FIELDS}")
    title = next((str(row[f]) for f in TITLE_FIELDS if row.get(f)), "")
    metadata = row.get("metadata")
    if not isinstance(metadata, dict):
        skip = {*ID_FIELDS, text_field, *TITLE_FIELDS, "metadata"}
        metadata = {k: v for k, v in row.items() if k not in skip and v not in (None, "")}
    return _doc(doc_id, row[text_field], title, source, metadata)


def load_jsonl(path: Path, doc_id: str, max_bytes: int) -> Iterator[Loaded]:
    """One document per line; a bad line is reported on its own and the rest of the file still loads."""
    text = _read_text(path, max_bytes)
    for lineno, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise LoaderError("expected a JSON object")
            yield _record(row, f"{doc_id}:{lineno}", f"{path}:{lineno}")
        except json.JSONDecodeError as exc:
            yield LoadFailure(f"{path}:{lineno}", f"invalid JSON ({exc.msg})")
        except (ValueError, RecursionError) as exc:  # an integer past 4,300 digits; nesting past the stack
            yield LoadFailure(f"{path}:{lineno}", f"unreadable JSON ({type(exc).__name__}: {exc})")
        except LoaderError as exc:
            yield LoadFailure(f"{path}:{lineno}", str(exc))


def load_csv(path: Path, doc_id: str, max_bytes: int) -> Iterator[Loaded]:
    """One document per row; a bad row is reported on its own and the rest of the file still loads."""
    text = _read_text(path, max_bytes)
    reader = csv.DictReader(io.StringIO(text, newline=""))  # the csv module reads \r, \n and \r\n itself
    header = _csv_header(reader)
    if not header:
        raise LoaderError("CSV file has no header row")
    raw_fields = set(TEXT_FIELDS + TITLE_FIELDS + ID_FIELDS)
    for lineno, row in enumerate(_csv_rows(reader), start=2):
        if None in row or any(v is None for v in row.values()):
            cells = sum(v is not None for k, v in row.items() if k is not None) + len(row.get(None) or [])
            yield LoadFailure(f"{path}:{lineno}", f"row has {cells} cells, the header has {len(header)}")
            continue
        clean = {k: v if k in raw_fields else _coerce(v) for k, v in row.items() if k}
        try:
            yield _record(clean, f"{doc_id}:{lineno}", f"{path}:{lineno}")
        except LoaderError as exc:
            yield LoadFailure(f"{path}:{lineno}", str(exc))


def _csv_header(reader: csv.DictReader[str]) -> list[str]:
    try:
        return list(reader.fieldnames or [])
    except csv.Error as exc:
        raise LoaderError(f"CSV header: {exc}") from exc


def _csv_rows(reader: csv.DictReader[str]) -> Iterator[dict[str | Any, str | Any]]:
    """The rows; a line the csv module cannot read (a field over its size limit, say) ends the file with its line."""
    try:
        yield from reader
    except csv.Error as exc:
        raise LoaderError(f"CSV line {reader.line_num + 1}: {exc}") from exc  # the line being read


LOADERS: dict[str, Callable[[Path, str, int], Iterator[Loaded]]] = {
    ".txt": load_txt,
    ".text": load_txt,
    ".md": load_markdown,
    ".markdown": load_markdown,
    ".html": load_html,
    ".htm": load_html,
    ".pdf": load_pdf,
    ".jsonl": load_jsonl,
    ".csv": load_csv,
}


def discover(paths: list[Path]) -> list[tuple[Path, Path]]:
    """Every loadable file under the given files or folders, with the root its id is relative to."""
    found: list[tuple[Path, Path]] = []
    for root in paths:
        if not root.exists():
            raise LoaderError(f"{root} does not exist")
        if root.is_file():
            found.append((root, root.parent))
            continue
        for p in sorted(root.rglob("*")):
            if (
                p.is_file()
                and p.suffix.lower() in LOADERS
                and not any(part.startswith(".") for part in p.relative_to(root).parts)
            ):
                found.append((p, root))
    return found


def load_path(path: Path, root: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Loaded]:
    """Documents of one file, and a ``LoadFailure`` for each bad record of a multi-record file.

    Raises ``LoaderError`` with a readable reason when the whole file is unusable.
    """
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise LoaderError(f"no loader for {path.suffix or 'files without an extension'}; known: {sorted(LOADERS)}")
    doc_id = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
    try:
        yield from loader(path, doc_id, max_bytes)
    except LoaderError as exc:
        raise LoaderError(f"{path}: {exc}") from exc
