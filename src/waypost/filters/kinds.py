"""Kinds of item a catalogue lists (its kind words, such as "movie" and "TV", name them): which kind a value
implies ("Horror Movies" only ever occurs with type = Movie), kinds asked together ("movies or TV shows"), and
a word read once per kind asked ("comedies": the films' 'Comedies', the series' 'TV Comedies')."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from waypost.filters.catalog import FieldCatalog
from waypost.filters.text import Token, tokenize
from waypost.filters.values import KIND_FIELD_MAX_VALUES, ValueForm, ValueIndex


class ItemKinds:
    """The kind policy of one catalogue (one generation's: what it reads is kept)."""

    def __init__(
        self, index: FieldCatalog, values: ValueIndex, synonyms: dict[str, str], kind_words: frozenset[str]
    ) -> None:
        self.index = index
        self.values = values
        self.synonyms = synonyms
        self.kind_words = kind_words
        self._implied: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._kinds: dict[str, list[str]] | None = None

    def implied(self, name: str, value: str) -> list[tuple[str, str]]:
        """The values of kind-like fields that every row holding ``name = value`` has."""
        key = (name, value)
        if key not in self._implied:
            out: list[tuple[str, str]] = []
            pos = self.index.positions(name, value)
            if len(pos):
                for other, vals in self.kind_fields().items():
                    if other == name:
                        continue
                    for v in vals:
                        if np.isin(pos, self.index.positions(other, v)).all():
                            out.append((other, v))
            self._implied[key] = out
        return self._implied[key]

    def implied_kinds(self, name: str, value: str) -> list[tuple[str, str]]:
        """The implied values that name a kind ("Horror Movies": type = Movie). Other implied values (every
        electric car is an automatic) say nothing the value's own condition does not, so they are no filter."""
        return [(other, v) for other, v in self.implied(name, value) if self._kind_words_of(v)]

    def _kind_words_of(self, value: str) -> frozenset[str]:
        return frozenset({t.norm for t in tokenize(value, self.synonyms)} & self.kind_words)

    def kind_fields(self) -> dict[str, list[str]]:
        """The kind-like fields (type: Movie | TV Show): string fields of at most 4 values, no flags; read
        once (the catalogue is one generation's)."""
        if self._kinds is None:
            found: dict[str, list[str]] = {}
            for other in self.index.fields:
                if self.index.field_kind(other) != "string" or other in self.values.flag_values:
                    continue
                vals = self.index.values(other)
                if len(vals) <= KIND_FIELD_MAX_VALUES:
                    found[other] = list(vals)
            self._kinds = found
        return self._kinds

    def of(self, form: ValueForm) -> frozenset[str]:
        """The kind words of a value: its own name's, or those of the kinds it implies."""
        if form.kinds:
            return form.kinds
        kinds: set[str] = set()
        for _other, v in self.implied(form.field, form.value):
            kinds |= self._kind_words_of(v)
        return frozenset(kinds)

    def one_per_kind(
        self, content: frozenset[str], window: list[Token], name_ok: Callable[[ValueForm], bool], asked: dict[int, str]
    ) -> list[ValueForm]:
        """With several kinds asked together, a word whose values split by kind (the films' 'Comedies', the
        series' 'TV Comedies') reads as one value of one field per kind asked; none if a kind has none."""
        kinds = set(asked.values())
        if not content or len(kinds) < 2:
            return []
        candidates = [f for f in self.values.forms(content) if (not f.words or name_ok(f)) and not f.demonym]
        if len(window) == 1 and not window[0].capital:
            candidates = [f for f in candidates if f.field not in self.values.name_fields]
        out: list[ValueForm] = []
        for kind in sorted(kinds):
            own = [f for f in candidates if self.of(f) == {kind}]
            if not own:
                return []
            out.append(max(own, key=lambda f: f.count))
        return out if len({f.field for f in out}) == 1 else []

    def together(self, tokens: list[Token]) -> set[int]:
        """Indices of kind words joined by "and"/"or" to the next kind ("movies or TV shows", "TV shows and
        movies"): the joiner right before the second, at most one word of the first's own between."""
        kinds = [x for x, t in enumerate(tokens) if t.norm in self.kind_words]
        out: set[int] = set()
        for a, b in itertools.pairwise(kinds):
            joined = b - 1 > a and tokens[b - 1].word in ("and", "or")
            if tokens[a].norm != tokens[b].norm and joined and b - a <= 3:
                out |= {a, b}
        for x in sorted(out):  # the whole kind phrase ("TV shows" is two kind tokens)
            while x > 0 and tokens[x - 1].norm in self.kind_words and x - 1 not in out:
                x -= 1
                out.add(x)
        return out


__all__ = ["ItemKinds"]
