"""Two kinds of item, each with its own words, asked for at once: "Korean movies and Swedish TV shows" means
(Korean AND movie) OR (Swedish AND TV show), not one AND of all four, which holds no row."""

from __future__ import annotations

from waypost.filters.model import Filter, Or
from waypost.filters.text import Token, stop_stems

JOINERS = ("and", "or", "plus")
MAX_OWN_WORDS = 3  # words of the second clause's own between the joiner and its kind ("and Swedish TV shows")


def kind_clauses_joiner(tokens: list[Token], kind_words: frozenset[str]) -> int | None:
    """The index of the joiner between two clauses that each name their own kind of item and their own words:
    the first ends with its kind phrase right before the joiner ("Korean movies"), the second has words of its
    own before its kind ("Swedish TV shows"); the kinds differ. None where the query is no such pair ("Korean
    movies and TV shows" describes both kinds with one word; "movies and Korean movies" is one kind)."""
    stop = stop_stems()
    for m, token in enumerate(tokens):
        if token.word not in JOINERS or m == 0 or tokens[m - 1].norm not in kind_words:
            continue
        first = m - 1
        while first > 0 and tokens[first - 1].norm in kind_words:
            first -= 1
        before = [t for t in tokens[:first] if t.norm not in stop and t.norm not in kind_words]
        second = next((x for x in range(m + 1, len(tokens)) if tokens[x].norm in kind_words), None)
        if second is None or not before:
            continue
        own = tokens[m + 1 : second]
        if not own or len(own) > MAX_OWN_WORDS or any(t.word in JOINERS for t in own):
            continue
        if all(t.norm in stop for t in own) or {t.norm for t in tokens[first:m]} == {tokens[second].norm}:
            continue
        return m
    return None


def either(left: Filter, right: Filter) -> Filter:
    """Either clause's filter; one that both clauses share is said once."""
    return left if left == right else Or((left, right))


__all__ = ["JOINERS", "either", "kind_clauses_joiner"]
