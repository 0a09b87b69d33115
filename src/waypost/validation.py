"""Checks at the public boundary: id lists, documents, collection names, query arguments.

Every problem is an ``InvalidInputError`` (an ``InvalidDocumentError`` for one document) whose message
names the argument, document id and field. Text is never refused for lone surrogates (``"\\ud800"``,
which ``json.loads`` accepts but UTF-8 cannot encode): they become U+FFFD, so a stray one costs a
character, not the document."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime
from typing import Any

import numpy as np

from waypost.errors import InvalidDocumentError, InvalidInputError
from waypost.types import Document

MAX_METADATA_DEPTH = 32  # nesting of lists and objects inside one metadata value
_SURROGATE = re.compile("[\ud800-\udfff]")
_COLLECTION_NAME = re.compile(r"\w[\w.\- ]{0,127}")
DOT_IDS = (".", "..")  # path segments, never document ids
AUTO_COLLECTION = "auto"  # collection "auto" asks the engine to choose (stage 1 routing): never a name


def _json_spelling(value: float) -> str:
    """How JSON spells a non-finite number (``repr`` of a numpy float is ``np.float64(nan)``)."""
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; a high and low surrogate side by side become
    the one character they encode. Text without surrogates is returned as it is (no copy)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def id_list(ids: Iterable[str], what: str = "ids") -> list[str]:
    """``ids`` as a list of strings. A bare string is refused: iterating it would name one document per
    character (``delete("doc1")`` would delete ``d``, ``o``, ``c`` and ``1``)."""
    if isinstance(ids, (str, bytes)):
        raise InvalidInputError(f"{what} must be a list of ids, not the single string {ids!r}; pass [{ids!r}]")
    if isinstance(ids, Mapping) or not isinstance(ids, Iterable):
        raise InvalidInputError(f"{what} must be a list of id strings, got {type(ids).__name__}")
    out: list[str] = []
    for item in ids:
        if not isinstance(item, str):
            raise InvalidInputError(f"{what} must all be strings; got {item!r} ({type(item).__name__})")
        out.append(clean_text(item))
    return out


def one_id(value: object, what: str = "document id") -> str:
    """A single id: a non-empty string (lone surrogates replaced)."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    return clean_text(value)


def collection_name(name: object, new: bool = True) -> str:
    """Collection names become directory names. A ``new`` one is letters, digits, ``_ . -`` and spaces, up to
    128, not starting with a dot or a space, and never ``auto`` (which asks the engine to choose). An existing
    one (stores made before this rule accepted more, such as ``notes:2024``) stays reachable unless it could be
    read as a path (``/``, ``\\``, a leading dot, NUL)."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"a collection name must be a non-empty string, got {name!r}")
    if any(c in name for c in "/\\\0") or name.startswith("."):
        raise InvalidInputError(f"a collection name cannot be a path (no '/', '\\', NUL or leading '.'), got {name!r}")
    if new and (not _COLLECTION_NAME.fullmatch(name) or name != name.rstrip()):
        raise InvalidInputError(
            f"a collection name is 1 to 128 letters, digits, '_', '.', '-' or spaces, starting with a letter, "
            f"digit or '_' (and not ending in a space), got {name!r}"
        )
    if new and name.casefold() == AUTO_COLLECTION:  # "Auto" would read as the choice on case-blind filesystems
        raise InvalidInputError(
            f"a collection cannot be named {AUTO_COLLECTION!r}: collection {AUTO_COLLECTION!r} lets waypost choose "
            "the collections"
        )
    return name


def query_text(query: object, what: str = "query") -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"the {what} must be a string, got {type(query).__name__}")
    query = clean_text(query)
    if not query.strip():
        raise InvalidInputError(f"the {what} is empty")
    return query


def positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be a whole number, got {value!r}")
    if value < 1:
        raise InvalidInputError(f"{what} must be at least 1, got {value}")
    return value


def non_negative_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be a whole number, got {value!r}")
    if value < 0:
        raise InvalidInputError(f"{what} must be 0 or more, got {value}")
    return value


def name_string(value: object, what: str) -> str:
    """A name chosen from a list (a strategy, a kind): a string, or a clear error."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {value!r}")
    return value


def string_mapping(value: object, what: str) -> Mapping[str, object] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(f"{what} must be a mapping of names to values, got {value!r}")
    return value


def _metadata_value(value: Any, doc_id: str, path: str) -> Any:
    """One metadata value, checked and cleaned without recursion (depth is bounded by hand)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, list[Any] | dict[str, Any], int | str, str, int]] = [(value, root, 0, path, 0)]
    while stack:
        item, parent, slot, where, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise InvalidDocumentError(
                f"document {doc_id!r}: metadata field {path!r} nests deeper than {MAX_METADATA_DEPTH} levels"
            )
        if isinstance(item, np.generic):
            item = item.item()  # a numpy scalar (np.bool_, np.str_, np.int64, ...) as the Python value it holds
        if isinstance(item, str):
            out: Any = clean_text(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidDocumentError(
                    f"document {doc_id!r}: metadata field {where!r} is {_json_spelling(item)}; "
                    "only finite numbers can be stored"
                )
            out = item
        elif item is None or isinstance(item, (bool, int, date, datetime)):
            out = item
        elif isinstance(item, (list, tuple)):
            out = [None] * len(item)
            stack.extend((v, out, i, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
        elif isinstance(item, Mapping):
            out = {}
            for key, v in item.items():
                if not isinstance(key, str):
                    raise InvalidDocumentError(
                        f"document {doc_id!r}: metadata field {where!r} has a key that is not a string: {key!r}"
                    )
                key = clean_text(key)
                out[key] = None
                stack.append((v, out, key, f"{where}.{key}", depth + 1))
        else:
            raise InvalidDocumentError(
                f"document {doc_id!r}: metadata field {where!r} holds a {type(item).__name__} ({item!r}); "
                "metadata takes text, numbers, true/false, dates, null, and lists or objects of those"
            )
        parent[slot] = out  # type: ignore[index]
    return root[0]


def check_metadata(metadata: object, doc_id: str) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        raise InvalidDocumentError(f"document {doc_id!r}: metadata must be a mapping, got {type(metadata).__name__}")
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InvalidDocumentError(f"document {doc_id!r}: metadata field names must be text, got {key!r}")
        key = clean_text(key)
        out[key] = _metadata_value(value, doc_id, key)
    return out


def document_stream(documents: Iterable[Document]) -> Iterable[Document]:
    """``documents`` if it is an iterable of documents; a single ``Document`` or a string is refused."""
    if isinstance(documents, (str, bytes, Document, Mapping)) or not isinstance(documents, Iterable):
        raise InvalidInputError(
            f"documents must be a list (or other iterable) of waypost.Document, got {type(documents).__name__}"
        )
    return documents


def check_document(doc: object) -> Document:
    """``doc`` ready to store: field types checked, lone surrogates replaced, metadata values finite and of
    storable types. An ``InvalidDocumentError`` names the document id and the field."""
    if not isinstance(doc, Document):
        raise InvalidInputError(f"expected a waypost.Document, got {type(doc).__name__}: {doc!r:.80}")
    if not isinstance(doc.id, str) or not doc.id.strip():
        raise InvalidDocumentError(f"a document id must be a non-empty string, got {doc.id!r}")
    if any(segment.strip() in DOT_IDS for segment in doc.id.split("/")):
        raise InvalidDocumentError(
            f"a document id cannot be {doc.id!r}: a '.' or '..' between slashes names a folder in a URL (HTTP "
            "clients rewrite '/documents/a/../..' to the collection itself)"
        )
    doc_id = clean_text(doc.id)
    for name in ("text", "title", "source", "language"):
        value = getattr(doc, name)
        if not isinstance(value, str):
            raise InvalidDocumentError(f"document {doc_id!r}: {name} must be a string, got {type(value).__name__}")
    cleaned = replace(
        doc,
        id=doc_id,
        text=clean_text(doc.text),
        title=clean_text(doc.title),
        source=clean_text(doc.source),
        language=clean_text(doc.language),
        metadata=check_metadata(doc.metadata, doc_id),
    )
    return cleaned  # not ``doc`` when equal: np.int64(3) == 3, yet only the int can be stored
