"""LLM-written community reports: the reply's title and summary over the extractive material, the same
cited rows, the fallback when the provider fails or replies with nothing usable, the engine's
``graph_reports`` setting (a stored graph another reporter wrote is built again), and SmolLM2-135M behind
the real llama.cpp server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from tests.llama_server import LlamaServer
from tests.test_graph_strategies import DOCS
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.graph.communities import ExtractiveReporter
from waypost.graph.graph import GraphConfig, KnowledgeGraph
from waypost.graph.llm_report import LLMReporter, parse_report
from waypost.llm.base import Completion, GenerationParams, LLMError, LLMProvider, Message, StreamResult
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.types import Document


class ReportLLM:
    """Replies ``reply`` to every prompt (or fails), and keeps the prompts."""

    model_id = "fake-reporter"

    def __init__(self, reply: str = "Title: Stargazers of Quillhaven\nThey founded and ran an observatory.") -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        self.prompts.append(messages[-1]["content"])
        if not self.reply:
            raise LLMError("connection refused")
        return Completion(self.reply, self.model_id, 120, 30)

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Title: A\nB c.", ("A", "B c.")),
        (
            "**Ships and yards**\n\nSummary: The yard built it.\nIt sank.",
            ("Ships and yards", "The yard built it. It sank."),
        ),
        ("# Rivers\nThe river runs.", ("Rivers", "The river runs.")),
        ("One paragraph, no title.", ("", "One paragraph, no title.")),
        ("Here is the report.\nTitle: Yards\nSummary: The yard built it.", ("Yards", "The yard built it.")),
        ("Here is the report.\nTitle: Yards\nThe yard built it.", ("Yards", "Here is the report. The yard built it.")),
        ("", None),
        ("Title: Only a title", None),
        ("Title:\nSummary:", None),
    ],
)
def test_parse_report(reply: str, expected: tuple[str, str] | None) -> None:
    assert parse_report(reply) == expected


def make_engine(path: Path, minilm: Embedder, reports: str, llm: LLMProvider | None) -> Engine:
    config = EngineConfig(chunk_tokens=64, background_index_work=False, graph=GraphConfig(community_max_size=8),
                          graph_reports=reports)  # fmt: skip
    engine = Engine(path, config)
    engine.register_embedder(minilm)
    engine.use_llm(llm)
    return engine


def add_docs(engine: Engine) -> None:
    coll = engine.collection("c", create=True)
    coll.add([Document(key, text, title, {"topic": topic}) for key, (title, topic, text) in DOCS.items()])


def built(engine: Engine) -> KnowledgeGraph:
    graph = engine.collection("c").graph().get()
    assert graph is not None and graph.communities
    return graph


def test_llm_reports_keep_the_extractive_material_and_citations(tmp_path: Path, minilm: Embedder) -> None:
    llm = ReportLLM()
    engine = make_engine(tmp_path / "s", minilm, "llm", llm)
    try:
        add_docs(engine)
        graph = built(engine)
        assert len(llm.prompts) == len(graph.communities)
        extractive = ExtractiveReporter()
        for c in graph.communities.values():
            _title, text, rows = extractive.report(graph, c)
            assert c.title == "Stargazers of Quillhaven" and c.rows == rows
            assert c.report.startswith("Stargazers of Quillhaven\nThey founded and ran an observatory.\n")
            assert text.split("\n", 1)[1] in c.report  # the members' names stay searchable
        reporter = engine.collection("c").graph().reporter
        assert isinstance(reporter, LLMReporter) and reporter.usage.llm_calls == len(graph.communities)
    finally:
        engine.close()
    # the same store with extractive reports: the stored graph was written by another reporter, so it is built anew
    engine = make_engine(tmp_path / "s", minilm, "extractive", None)
    try:
        assert all(c.title != "Stargazers of Quillhaven" for c in built(engine).communities.values())
    finally:
        engine.close()


def test_a_failing_llm_falls_back_to_extractive_reports(tmp_path: Path, minilm: Embedder) -> None:
    engine = make_engine(tmp_path / "s", minilm, "llm", ReportLLM(reply=""))
    try:
        add_docs(engine)
        graph = built(engine)
        extractive = ExtractiveReporter()
        for c in graph.communities.values():
            assert (c.title, c.report, c.rows) == extractive.report(graph, c)
        reporter = engine.collection("c").graph().reporter
        assert isinstance(reporter, LLMReporter)
        assert len(reporter.usage.fallbacks) == len(graph.communities) and reporter.usage.llm_calls == 0
    finally:
        engine.close()


def test_llm_reports_need_an_llm(tmp_path: Path, minilm: Embedder) -> None:
    engine = make_engine(tmp_path / "s", minilm, "llm", None)
    try:
        add_docs(engine)
        with pytest.raises(WaypostError, match="graph_reports='llm' needs an LLM"):
            engine.collection("c").graph()
    finally:
        engine.close()
    engine = make_engine(tmp_path / "t", minilm, "abstract", None)
    try:
        add_docs(engine)
        with pytest.raises(WaypostError, match="graph_reports must be 'extractive' or 'llm'"):
            engine.collection("c").graph()
    finally:
        engine.close()


@pytest.mark.slow
def test_smollm2_writes_community_reports(llama_server: LlamaServer, tmp_path: Path, minilm: Embedder) -> None:
    llm = OpenAICompatibleLLM("smollm2", llama_server.url, timeout=60, backoff=0.05)
    engine = make_engine(tmp_path / "s", minilm, "llm", llm)
    try:
        add_docs(engine)
        graph = built(engine)
        reporter = engine.collection("c").graph().reporter
        assert isinstance(reporter, LLMReporter)
        assert reporter.usage.llm_calls == len(graph.communities), reporter.usage.fallbacks
        assert reporter.usage.llm_calls > 0 and reporter.usage.completion_tokens > 0
        assert len(reporter.usage.fallbacks) < len(graph.communities) / 2, reporter.usage.fallbacks
        extractive = ExtractiveReporter()
        written = [c for c in graph.communities.values() if c.report != extractive.report(graph, c)[1]]
        assert len(written) == len(graph.communities) - len(reporter.usage.fallbacks)
        for c in graph.communities.values():
            assert c.title and "Entities: " in c.report and c.rows
        result = engine.collection("c").retrieve("Who founded Marrowdale Observatory?", "graph-global", k=3)
        assert result.hits
    finally:
        engine.close()


@pytest.mark.slow
def test_cli_builds_llm_reports_and_keeps_them(
    llama_server: LlamaServer, tmp_path: Path, minilm: Embedder, cli: Cli
) -> None:
    engine = make_engine(tmp_path / "s", minilm, "extractive", None)
    add_docs(engine)
    engine.close()
    where = ("--store", str(tmp_path / "s"), "-c", "c")
    llm = f"openai:smollm2@{llama_server.url}"
    build = cli("graph", "build", *where, "--reports", "llm", "--llm", llm, "--json")
    assert build.exit_code == 0, build.stderr
    data = json.loads(build.stdout)
    assert data["reporter"] == "llm:openai:smollm2" and data["built_at"] == data["updated_at"]
    again = cli("graph", "build", *where)  # the stored reports need the LLM to be extended
    assert again.exit_code == 2 and "reports were written by an LLM: pass --llm" in again.stderr
    shown = cli("graph", "show", *where, "--community", "0", "--json")  # read as stored
    assert shown.exit_code == 0, shown.stderr
    offline = cli("graph", "build", *where, "--reports", "extractive", "--json")
    assert offline.exit_code == 0, offline.stderr
    rebuilt = json.loads(offline.stdout)
    assert rebuilt["reporter"] == "extractive" and rebuilt["built_at"] > data["built_at"]
