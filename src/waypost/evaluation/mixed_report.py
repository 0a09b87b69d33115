"""The HTML report of ``waypost bench mixed --report DIR``: index.html with PNG plots (matplotlib, Agg):
auto against each fixed pipeline and the oracle per set, the distribution of chosen pipelines, a
confusion matrix of chosen against oracle pipelines, and the corrective loop's retries."""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

from waypost.evaluation.mixed_bench import BenchResult


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sets(result: BenchResult, path: Path) -> None:
    plt = _plt()
    pipelines = sorted({p for s in result.sets for p in result.fixed[s]})
    series = [*pipelines, "auto", "oracle"]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(8, 2.0 * len(result.sets)), 4.8))
    cmap = plt.get_cmap("tab20")
    for i, name in enumerate(series):
        values = [
            result.auto[s]
            if name == "auto"
            else result.oracle[s]
            if name == "oracle"
            else result.fixed[s].get(name, 0.0)
            for s in result.sets
        ]
        xs = [j + (i - len(series) / 2 + 0.5) * width for j in range(len(result.sets))]
        color = "black" if name == "auto" else "0.7" if name == "oracle" else cmap(i % 20)
        ax.bar(xs, values, width, label=name, color=color, edgecolor="white", linewidth=0.3)
    ax.set_xticks(range(len(result.sets)))
    ax.set_xticklabels([f"{s}\n({result.metrics[s]})" for s in result.sets], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("set metric (test split)")
    ax.set_title("auto routing against every fixed pipeline and the per-query oracle")
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_choices(result: BenchResult, path: Path) -> None:
    plt = _plt()
    labels = sorted({c for _, c, _ in result.choices})
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    bottom = [0] * len(labels)
    cmap = plt.get_cmap("tab10")
    for i, s in enumerate(result.sets):
        counts = Counter(c for set_name, c, _ in result.choices if set_name == s)
        heights = [counts.get(lbl, 0) for lbl in labels]
        ax.bar(labels, heights, bottom=bottom, label=s, color=cmap(i % 10))
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel("test queries")
    ax.set_ylim(0, max(bottom, default=0) * 1.06 + 1)  # room above the tallest bar
    ax.set_title("pipelines auto chose, by the set the query came from")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_confusion(result: BenchResult, path: Path) -> None:
    plt = _plt()
    labels = sorted({c for _, c, _ in result.choices} | {o for _, _, o in result.choices})
    index = {lbl: i for i, lbl in enumerate(labels)}
    grid = [[0] * len(labels) for _ in labels]
    for _, chosen, oracle in result.choices:
        grid[index[oracle]][index[chosen]] += 1
    fig, ax = plt.subplots(figsize=(1.0 * len(labels) + 3, 0.8 * len(labels) + 2.5))
    if not labels:  # no query was routed: an empty picture, not a crash
        ax.set_title("chosen against oracle pipelines: no queries")
        ax.set_axis_off()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return
    ax.imshow(grid, cmap="Blues")
    for i, row in enumerate(grid):
        for j, n in enumerate(row):
            if n:
                ax.text(
                    j,
                    i,
                    str(n),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="black" if n < max(map(max, grid)) / 2 else "white",
                )
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("chosen")
    ax.set_ylabel("oracle (the chosen one where it ties)")
    ax.set_title(f"chosen against oracle pipelines (accuracy {result.strategy_accuracy:.3f}, ties count)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_retries(result: BenchResult, path: Path) -> None:
    plt = _plt()
    counts = Counter(result.retries)
    xs = list(range(0, max(counts, default=0) + 1))
    fig, ax = plt.subplots(figsize=(5, 3.5))
    if result.info.get("auto_mode") == "table":  # the table scores choices; no retry ran to count
        ax.set_title("corrective loop: not run (--table)")
        ax.set_axis_off()
    else:
        ax.bar([str(x) for x in xs], [counts.get(x, 0) for x in xs], color="tab:orange")
        ax.set_xlabel("corrective retries per query")
        ax.set_ylabel("test queries")
        retried = sum(1 for r in result.retries if r)
        ax.set_title(f"corrective loop: {retried} of {len(result.retries)} queries retried")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def corrective_note(result: BenchResult) -> str:
    """A sentence per set: how often the corrective loop retried and what auto gained over routing alone."""
    summary = result.info.get("corrective")
    if not summary:
        return "<p>The corrective loop runs only when auto runs end to end (not with --table).</p>"
    items = "".join(
        f"<li>{html.escape(s)}: retried {v['retried_share']:.1%} of queries; auto minus routing alone "
        f"{v['gain_over_routing_only']:+.4f}</li>"
        for s, v in summary["by_set"].items()
    )
    total = f"Retried {summary['retried_share']:.1%} of the test queries ({summary['retries']} retries)."
    return f"<p>{total}</p><ul>{items}</ul>"


def write_report(result: BenchResult, directory: str | Path) -> Path:
    """index.html, four PNGs and bench.json (every figure, controls included) in ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    plot_sets(result, out / "sets.png")
    plot_choices(result, out / "choices.png")
    plot_confusion(result, out / "confusion.png")
    plot_retries(result, out / "retries.png")
    data = {**result.to_json(), "info": result.info}
    (out / "bench.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    rows = []
    for s in result.sets:
        best = max(result.fixed[s], key=lambda p: result.fixed[s][p])
        ctrl = "".join(f"<td>{result.controls[c].get(s, float('nan')):.4f}</td>" for c in result.controls)
        rows.append(
            f"<tr><td>{html.escape(s)}</td><td>{result.metrics[s]}</td><td><b>{result.auto[s]:.4f}</b></td>"
            f"<td>{result.fixed[s][best]:.4f} ({html.escape(best)})</td><td>{result.oracle[s]:.4f}</td>{ctrl}</tr>"
        )
    avg = result.averages()
    heads = "".join(f"<th>{html.escape(c)}</th>" for c in result.controls)
    coll = "n/a" if result.collection_accuracy is None else f"{result.collection_accuracy:.4f}"
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>waypost bench mixed</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}
td,th{{padding:3px 8px;border-bottom:1px solid #ddd}}</style>
</head><body><h1>waypost bench mixed</h1>
<p>{result.info.get("queries", 0)} test queries, interleaved; auto scored in {result.info.get("auto_mode")} mode.
Average over the sets: auto <b>{avg["auto"]:.4f}</b>, best single fixed pipeline ({html.escape(result.best_single)})
{avg["best_single"]:.4f}, oracle {avg["oracle"]:.4f}; gap closed {result.oracle_gap_closed:.3f}.
Strategy accuracy {result.strategy_accuracy:.4f} (ties count); collection accuracy {coll};
router p95 {result.router_p95_ms:.2f} ms; auto end to end p95 {result.auto_p95_ms:.1f} ms.</p>
<table><tr><th>set</th><th>metric</th><th>auto</th><th>best fixed</th><th>oracle</th>{heads}</tr>{"".join(rows)}</table>
<h2>Per set</h2><img src="sets.png" alt="auto, fixed pipelines and oracle per set">
<h2>Chosen pipelines</h2><img src="choices.png" alt="distribution of chosen pipelines">
<h2>Chosen against oracle</h2><img src="confusion.png" alt="confusion matrix">
<h2>Corrective retries</h2>{corrective_note(result)}<img src="retries.png" alt="retries">
</body></html>"""
    (out / "index.html").write_text(page, encoding="utf-8")
    return out / "index.html"
