"""What ``waypost graph status`` and ``graph show`` print: an entity's or a community's view, as JSON or text."""

from __future__ import annotations

import datetime
import difflib
from typing import Any

from rich.table import Table

from waypost.cli.app import console
from waypost.engine import Engine
from waypost.graph.graph import KnowledgeGraph
from waypost.graph.model import entity_key

NO_GRAPH = "collection {!r} has no graph (build one with: waypost graph build)"


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


def _print_graph_status(data: dict[str, Any]) -> None:
    if not data["built"]:
        console.print(NO_GRAPH.format(data["collection"]))
        return
    behind = data["store_generation"] - data["generation"]
    levels = ", ".join(f"level {level}: {n}" for level, n in data["communities"].items()) or "none"
    seconds = ", ".join(f"{stage} {s:.2f}" for stage, s in data["build_seconds"].items()) or "-"
    update = data["last_update"]
    lag = f"([yellow]{behind} behind: waypost graph build catches up[/])" if behind else "(current)"
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in (
        ("collection", data["collection"]),
        ("extractor", f"{data['extractor']} (reports: {data['reporter']})"),
        ("entities", f"{data['entities']} ({data['named_entities']} named, "
                     f"{data['entities'] - data['named_entities']} phrases)"),
        ("relations", data["relations"]),
        ("mentions", data["mentions"]),
        ("synonyms", data["synonyms"]),
        ("communities", levels),
        ("chunks covered", data["chunks"]),
        ("generation", f"{data['generation']} of the store's {data['store_generation']} {lag}"),
        ("drift", f"{data['drift']:.4f} (Leiden runs again past {data['drift_threshold']})"),
        ("size", f"{data['size_mb']:.2f} MB"),
        ("build seconds", seconds),
        ("built", _when(data["built_at"])),
        ("last update", ", ".join(f"{k} {v}" for k, v in update.items()) if update else _when(data["updated_at"])),
    ):  # fmt: skip
        table.add_row(key, str(value))
    console.print(table, highlight=False)


def _suggest(graph: KnowledgeGraph, name: str, n: int = 5) -> list[str]:
    """Entity names close to ``name``: those whose key holds it (or it theirs), then difflib's nearest keys."""
    key = entity_key(name)
    keys = sorted(graph.by_key, key=lambda k: (-len(graph.entities[graph.by_key[k]].rows), k))
    near = [k for k in keys if key and (key in k or (len(k) > 3 and k in key))]
    near += difflib.get_close_matches(key, list(graph.by_key), n=n, cutoff=0.6)
    return [graph.entities[graph.by_key[k]].name for k in dict.fromkeys(near)][:n]


def _chunk_refs(engine: Engine, collection: str, rows: list[int]) -> dict[int, dict[str, Any]]:
    """Chunk row -> where it is (chunk id, document id and title, chunk index)."""
    out: dict[int, dict[str, Any]] = {}
    for stored in engine.store.chunks_by_row(collection, sorted(set(rows))):
        c = stored.chunk
        out[stored.row_id] = {
            "row": stored.row_id, "chunk_id": c.id, "document_id": c.document_id, "chunk_index": c.index,
            "title": stored.title, "start": c.start, "end": c.end,
        }  # fmt: skip
    return out


def _ref(refs: dict[int, dict[str, Any]], row: int) -> dict[str, Any]:
    return refs.get(row) or {"row": row, "chunk_id": None, "document_id": None, "chunk_index": None, "title": None}


def _community_brief(graph: KnowledgeGraph, cid: int) -> dict[str, Any]:
    c = graph.communities[cid]
    return {"id": c.id, "level": c.level, "parent": c.parent, "title": c.title, "members": len(c.members)}


def _entity_view(engine: Engine, collection: str, graph: KnowledgeGraph, eid: int, hops: int) -> dict[str, Any]:
    e = graph.entities[eid]
    relations = sorted(graph.relations_of(eid), key=lambda r: (-r.weight, r.id))
    refs = _chunk_refs(engine, collection, [*e.rows, *(r.row for r in relations)])
    mentions = [
        {**_ref(refs, row), "count": count, "sentence": e.sentences.get(row, "")}
        for row, count in sorted(e.rows.items(), key=lambda rc: (-rc[1], rc[0]))
    ]
    rels = []
    for r in relations:
        other = r.target if r.source == eid else r.source
        rels.append({
            "id": r.id, "source": graph.entities[r.source].name, "target": graph.entities[r.target].name,
            "label": r.label, "direction": "out" if r.source == eid else "in", "other": other,
            "other_name": graph.entities[other].name, "weight": r.weight, **_ref(refs, r.row),
        })  # fmt: skip
    synonyms = [
        {"id": o, "name": graph.entities[o].name, "similarity": sim}
        for o, sim in sorted(graph.synonyms.get(eid, {}).items(), key=lambda os: -os[1])
        if o in graph.entities
    ]
    seen, frontier, neighbours = {eid}, {eid: 0.0}, []
    for hop in range(1, hops + 1):
        reached: dict[int, float] = {}
        for node in frontier:
            for other, w in graph.neighbours(node).items():
                if other not in seen and other in graph.entities:
                    reached[other] = reached.get(other, 0.0) + w
        for other, w in sorted(reached.items(), key=lambda ow: (-ow[1], ow[0])):
            o = graph.entities[other]
            neighbours.append({"id": other, "name": o.name, "label": o.label, "hops": hop, "weight": round(w, 4)})
        seen |= set(reached)
        frontier = reached
    return {
        "collection": collection,
        "entity": {"id": e.id, "name": e.name, "key": e.key, "label": e.label, "kind": e.kind,
                   "description": e.description, "chunks": len(e.rows), "mentions": sum(e.rows.values())},
        "mentions": mentions,
        "relations": rels,
        "synonyms": synonyms,
        "communities": [_community_brief(graph, c) for c in graph.member_of.get(eid, []) if c in graph.communities],
        "neighbours": neighbours,
    }  # fmt: skip


def _community_view(engine: Engine, collection: str, graph: KnowledgeGraph, cid: int) -> dict[str, Any]:
    c = graph.communities[cid]
    refs = _chunk_refs(engine, collection, c.rows)
    members = sorted(c.members, key=lambda m: (-len(graph.entities[m].rows), m))
    return {
        "collection": collection,
        "community": {**_community_brief(graph, cid), "report": c.report},
        "members": [{"id": m, "name": graph.entities[m].name, "label": graph.entities[m].label,
                     "chunks": len(graph.entities[m].rows)} for m in members],
        "sources": [_ref(refs, row) for row in c.rows],
        "children": [_community_brief(graph, o) for o in sorted(graph.communities)
                     if graph.communities[o].parent == cid],
    }  # fmt: skip


def _where(ref: dict[str, Any]) -> str:
    if ref["chunk_id"] is None:
        return f"row {ref['row']} (gone)"
    return f"{ref['chunk_id']} (row {ref['row']})"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _more(shown: int, total: int, indent: str = "  ") -> None:
    if total > shown:
        console.print(f"{indent}[dim]… {total - shown} more (--limit)[/]")


def _print_entity(view: dict[str, Any], limit: int) -> None:
    e = view["entity"]
    out = console.print
    out(f"[bold]{e['name']}[/]  {e['label']} ({e['kind']}), entity #{e['id']}, "
        f"{_n(e['mentions'], 'mention')} in {_n(e['chunks'], 'chunk')}", highlight=False)  # fmt: skip
    if e["description"]:
        out(f"[italic]{e['description']}[/]", highlight=False)
    out(f"\n[bold]mentioned in[/] ({_n(len(view['mentions']), 'chunk')})")
    for m in view["mentions"][:limit]:
        doc = f"{m['document_id']}" + (f" “{m['title']}”" if m["title"] else "") if m["document_id"] else "?"
        out(f"  {_where(m)}  [dim]{doc}[/]", highlight=False)
        if m["sentence"]:
            out(f"    {m['sentence']}", highlight=False)
    _more(min(limit, len(view["mentions"])), len(view["mentions"]))
    out(f"\n[bold]relations[/] ({len(view['relations'])})")
    for r in view["relations"][:limit]:
        out(f"  {r['source']} — {r['label']} — {r['target']}  [dim]{_where(r)}[/]", highlight=False)
    _more(min(limit, len(view["relations"])), len(view["relations"]))
    if view["synonyms"]:
        out("\n[bold]synonyms[/] " + ", ".join(f"{s['name']} ({s['similarity']:.2f})" for s in view["synonyms"]),
            highlight=False)  # fmt: skip
    out("\n[bold]communities[/]" + ("" if view["communities"] else " none"))
    for c in view["communities"]:
        out(f"  #{c['id']} L{c['level']} {c['title']} ({_n(c['members'], 'member')})", highlight=False)
    hops = max((n["hops"] for n in view["neighbours"]), default=0)
    for hop in range(1, hops + 1):
        near = [n for n in view["neighbours"] if n["hops"] == hop]
        out(f"\n[bold]neighbours, {hop} hop{'s' if hop > 1 else ''}[/] ({len(near)})")
        out("  " + "; ".join(f"{n['name']} [dim]{n['label']} {n['weight']:g}[/]" for n in near[:limit]),
            highlight=False)  # fmt: skip
        _more(min(limit, len(near)), len(near))


def _print_community(view: dict[str, Any], limit: int) -> None:
    c = view["community"]
    out = console.print
    parent = f", inside #{c['parent']}" if c["parent"] >= 0 else ""
    out(f"[bold]community #{c['id']}[/] L{c['level']}{parent}: {c['title']} ({_n(c['members'], 'member')})",
        highlight=False)  # fmt: skip
    out("\n[bold]members[/] " + "; ".join(f"{m['name']} [dim]{m['label']}[/]" for m in view["members"][:limit]),
        highlight=False)  # fmt: skip
    _more(min(limit, len(view["members"])), len(view["members"]))
    if view["children"]:
        out("\n[bold]sub-communities[/] " + "; ".join(f"#{k['id']} {k['title']}" for k in view["children"]),
            highlight=False)  # fmt: skip
    out("\n[bold]report[/]")
    out(c["report"], highlight=False, markup=False)
    out(f"\n[bold]sources[/] ({_n(len(view['sources']), 'chunk')})")
    for s in view["sources"][:limit]:
        out(f"  {_where(s)}  [dim]{s['document_id'] or '?'}[/]", highlight=False)
    _more(min(limit, len(view["sources"])), len(view["sources"]))
