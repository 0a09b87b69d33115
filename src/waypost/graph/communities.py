"""Communities of the entity graph: Leiden (leidenalg) in two levels, updated locally between runs, and a
report per community (extractive by default: its key entities, relations and most central sentences)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from waypost.graph.graph import Community, KnowledgeGraph, Touched

MIN_MEMBERS = 2


class CommunityReporter(Protocol):
    @property
    def name(self) -> str:
        """Stored with the graph: a graph another reporter wrote is built again."""
        ...

    def report(self, graph: KnowledgeGraph, community: Community) -> tuple[str, str, list[int]]:
        """(title, report text, chunk rows the report cites)."""
        ...


def _entity_graph(graph: KnowledgeGraph, ids: list[int]) -> object:
    import igraph

    index = {e: i for i, e in enumerate(ids)}
    weights: dict[tuple[int, int], float] = {}
    for r in graph.relations.values():
        a, b = index.get(r.source), index.get(r.target)
        if a is not None and b is not None and a != b:
            pair = (min(a, b), max(a, b))
            weights[pair] = weights.get(pair, 0.0) + r.weight
    for e, others in graph.synonyms.items():
        for o, sim in others.items():
            a, b = index.get(e), index.get(o)
            if a is not None and b is not None and a < b:
                weights[(a, b)] = weights.get((a, b), 0.0) + sim
    g = igraph.Graph(n=len(ids), edges=list(weights))
    g.es["weight"] = list(weights.values())
    return g


def _leiden(g: object, seed: int) -> list[list[int]]:
    import leidenalg

    partition = leidenalg.find_partition(g, leidenalg.ModularityVertexPartition, weights="weight", seed=seed)
    return [list(members) for members in partition]


def detect(graph: KnowledgeGraph, seed: int = 42) -> set[int]:
    """Run Leiden over the whole graph (replacing every community); the new communities' ids."""
    ids = sorted(graph.entities)
    graph.communities.clear()
    graph.member_of.clear()
    if ids:
        g = _entity_graph(graph, ids)
        for group in _leiden(g, seed):
            if len(group) < MIN_MEMBERS:
                continue
            top = _new(graph, 0, -1, [ids[i] for i in group])
            if len(group) > graph.config.community_max_size:
                sub = g.subgraph(group)  # type: ignore[attr-defined]
                for part in _leiden(sub, seed):
                    if len(part) >= MIN_MEMBERS:
                        _new(graph, 1, top.id, [ids[group[i]] for i in part])
    graph.entities_at_leiden = len(graph.entities)
    graph.changed_since_leiden = 0
    graph.version += 1
    return set(graph.communities)


def _new(graph: KnowledgeGraph, level: int, parent: int, members: list[int]) -> Community:
    c = Community(graph.next_community, level, parent, sorted(members))
    graph.next_community += 1
    graph.communities[c.id] = c
    for m in c.members:
        graph.member_of.setdefault(m, []).append(c.id)
    return c


def _best_community(graph: KnowledgeGraph, entity: int, level: int, parent: int | None) -> int | None:
    votes: dict[int, float] = {}
    for other, weight in graph.neighbours(entity).items():
        for cid in graph.member_of.get(other, []):
            c = graph.communities[cid]
            if c.level == level and (parent is None or c.parent == parent):
                votes[cid] = votes.get(cid, 0.0) + weight
    return max(votes, key=lambda c: (votes[c], -c)) if votes else None


def _join(graph: KnowledgeGraph, entity: int, cid: int) -> None:
    c = graph.communities[cid]
    if entity not in c.members:
        c.members.append(entity)
        c.members.sort()
        graph.member_of.setdefault(entity, []).append(cid)


def update(graph: KnowledgeGraph, touched: Touched) -> tuple[set[int], set[int]]:
    """A local update after ``apply``: new entities join the community most of their neighbours are in
    (at each level), new entities with none form communities of their own connected groups, and
    communities left with fewer than two members go. Returns (communities to report again, dropped ones)."""
    dirty = set(touched.communities)
    fresh: list[int] = []
    for e in sorted(touched.new_entities):
        top = _best_community(graph, e, 0, None)
        if top is None:
            fresh.append(e)
            continue
        _join(graph, e, top)
        dirty.add(top)
        sub = _best_community(graph, e, 1, top)
        if sub is not None:
            _join(graph, e, sub)
            dirty.add(sub)
    dirty |= _group_fresh(graph, fresh)
    for e in touched.entities:
        dirty.update(graph.member_of.get(e, []))
    dropped: set[int] = set()
    for cid in sorted(dirty):
        c = graph.communities.get(cid)
        if c is not None and len(c.members) < MIN_MEMBERS:
            for m in c.members:
                graph.member_of[m] = [x for x in graph.member_of.get(m, []) if x != cid]
            del graph.communities[cid]
            dropped.add(cid)
    graph.version += 1
    return {c for c in dirty if c in graph.communities}, dropped


def _group_fresh(graph: KnowledgeGraph, fresh: list[int]) -> set[int]:
    """Connected groups among entities no community claims, each a new top-level community."""
    pending = set(fresh)
    made: set[int] = set()
    while pending:
        start = pending.pop()
        group, stack = [start], [start]
        while stack:
            for other in graph.neighbours(stack.pop()):
                if other in pending:
                    pending.discard(other)
                    group.append(other)
                    stack.append(other)
        if len(group) >= MIN_MEMBERS:
            made.add(_new(graph, 0, -1, group).id)
    return made


class ExtractiveReporter:
    """A report with no LLM: the members that matter most (weighted degree inside the community plus
    mentions), the strongest relations among them, and the sentences that name the most members."""

    name = "extractive"

    def __init__(self, entities: int = 8, relations: int = 8, sentences: int = 3) -> None:
        self.n_entities, self.n_relations, self.n_sentences = entities, relations, sentences

    def report(self, graph: KnowledgeGraph, community: Community) -> tuple[str, str, list[int]]:
        members = set(community.members)
        degree: dict[int, float] = {}
        relations: list[tuple[float, int]] = []
        for m in community.members:
            e = graph.entities[m]
            degree[m] = degree.get(m, 0.0) + sum(e.rows.values())
            for r in graph.relations_of(m):
                other = r.target if r.source == m else r.source
                if other in members:
                    degree[m] += r.weight
                    if r.source == m:
                        relations.append((r.weight, r.id))
        key = sorted(degree, key=lambda m: (-degree[m], m))[: self.n_entities]
        names = [graph.entities[m].name for m in key]
        title = ", ".join(names[:3])
        rows: list[int] = []
        pair_seen: set[tuple[int, int]] = set()
        rel_lines: list[str] = []
        for _w, rid in sorted(relations, key=lambda wr: (-wr[0], wr[1])):
            r = graph.relations[rid]
            pair = (min(r.source, r.target), max(r.source, r.target))
            if pair in pair_seen:
                continue
            pair_seen.add(pair)
            rel_lines.append(f"{graph.entities[r.source].name} — {r.label} — {graph.entities[r.target].name}")
            rows.append(r.row)
            if len(rel_lines) >= self.n_relations:
                break
        naming: Counter[tuple[int, str]] = Counter()
        for m in community.members:
            for row, sentence in graph.entities[m].sentences.items():
                naming[(row, sentence)] += 1
        central = [rs for rs, _n in naming.most_common(self.n_sentences)]
        rows.extend(row for row, _s in central)
        text = "\n".join(
            [
                f"{title}",
                "Entities: " + "; ".join(names),
                *(["Relations: " + "; ".join(rel_lines)] if rel_lines else []),
                "Evidence: " + " ".join(s for _r, s in central),
            ]
        )
        return title, text, sorted(set(rows))


def write_reports(graph: KnowledgeGraph, ids: Iterable[int], reporter: CommunityReporter) -> list[int]:
    """Fill the reports of communities ``ids``; the ids written."""
    done: list[int] = []
    for cid in sorted(ids):
        c = graph.communities.get(cid)
        if c is None:
            continue
        c.title, c.report, c.rows = reporter.report(graph, c)
        c.vector = None  # embedded again by the caller
        done.append(cid)
    return done
