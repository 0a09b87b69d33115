"""Languages: detection, analyzers and fusion on text written for these tests in languages and scripts
no shared data set has (Russian, Arabic, Vietnamese, Hindi, Japanese), plus Thai and Chinese."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.ingest.chunker import split_sentences
from waypost.text.analyzers import analyzers, normalize
from waypost.text.language import detector
from waypost.types import Document

CORPORA: dict[str, list[tuple[str, str]]] = {
    "ru": [
        ("ru-river", "Река Волга течёт через всю страну. Рыбаки ловят рыбу в её широких водах каждое утро."),
        ("ru-library", "В старой библиотеке хранятся тысячи книг. Читатели приходят сюда изучать историю города."),
        ("ru-train", "Поезд отправляется с вокзала ровно в полночь. Пассажиры спят в уютных вагонах до рассвета."),
        ("ru-garden", "Бабушка выращивает в саду яблоки и вишни. Летом внуки помогают ей собирать урожай."),
    ],
    "ar": [
        ("ar-market", "يبيع التجار التوابل والأقمشة في السوق القديم. يزور السياح السوق كل صباح."),
        ("ar-desert", "تعبر القوافل الصحراء الواسعة ليلا. يرشد النجوم المسافرين إلى الواحات."),
        ("ar-school", "يدرس الطلاب الرياضيات والعلوم في المدرسة الجديدة. المعلمون يشجعون الأسئلة."),
        ("ar-sea", "يصطاد البحارة السمك في البحر الأحمر. تعود القوارب إلى الميناء عند الغروب."),
    ],
    "vi": [
        ("vi-rice", "Nông dân trồng lúa trên những cánh đồng bậc thang. Mùa gặt diễn ra vào cuối mùa thu."),
        ("vi-coffee", "Cà phê sữa đá là thức uống phổ biến ở Sài Gòn. Người ta uống cà phê vào buổi sáng."),
        ("vi-bridge", "Cây cầu mới nối hai bờ sông Hồng. Xe máy qua cầu suốt ngày đêm."),
        ("vi-festival", "Tết Trung thu là lễ hội của trẻ em. Các em rước đèn lồng và ăn bánh nướng."),
    ],
}
QUERIES = {
    "ru": [("книги по истории города в библиотеке", "ru-library"), ("рыбак ловит рыбу на реке", "ru-river")],
    "ar": [("السياح في السوق", "ar-market"), ("القوارب والميناء", "ar-sea")],
    "vi": [("uống cà phê buổi sáng", "vi-coffee"), ("lễ hội đèn lồng", "vi-festival")],
}


@pytest.mark.parametrize("language", sorted(CORPORA))
def test_documents_and_queries_in_other_scripts(tmp_path: Path, minilm: Embedder, language: str) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    report = coll.add([Document(doc_id, text) for doc_id, text in CORPORA[language]])
    assert {d.language for d in coll.documents()} == {""}  # detected, not declared: nothing is stored
    assert coll.add(list(coll.documents())).unchanged == report.added  # so reading back and re-adding is a no-op
    assert coll.engine.indexes.get("c").languages == {language: report.chunks}
    for query, expected in QUERIES[language]:
        for strategy in ("bm25", "hybrid"):
            result = coll.retrieve(query, strategy, k=3)
            assert result.hits[0].document_id == expected, (strategy, query, [h.document_id for h in result.hits])
            assert result.hits[0].chunk.language == language
    for strategy in ("bm25", "dense", "hybrid"):
        explained = coll.retrieve(QUERIES[language][0][0], strategy).explanation
        assert any(f"language={language}" in n for n in explained.notes), strategy
    engine.close()


def test_stemming_and_normalization_in_several_languages() -> None:
    a = analyzers()
    assert set(a("ru").terms("защиты")) == set(a("ru").terms("защита"))  # one stem for two case forms
    assert set(a("de").terms("Häuser")) == set(a("de").terms("Häusern"))
    assert a("hi").terms("रक्षा")  # Devanagari vowel signs stay inside the word
    assert a("en").terms("ＲＩＶＥＲＳ") == a("en").terms("rivers")  # full-width folded, case folded
    assert normalize("Straße") == "strasse"
    assert a("th").terms("ทีมรับของแพนเธอร์ส") == ["ทีม", "รับ", "ของ", "แพน", "เธอร์ส"]
    assert "防守" in a("zh").terms("黑豹队的防守丢了多少分？")
    assert "東京" in a("ja").terms("東京都に住んでいます。")


def test_detection_by_script_and_model() -> None:
    d = detector()
    samples = {
        "en": "The river floods the valley every spring, and the farmers move their herds uphill.",
        "de": "Der Fluss überschwemmt jedes Frühjahr das Tal, und die Bauern treiben ihre Herden bergauf.",
        "ru": "Река каждую весну затапливает долину, и крестьяне уводят стада в горы.",
        "ar": "يفيض النهر على الوادي كل ربيع، وينقل المزارعون قطعانهم إلى أعلى التلال.",
        "vi": "Con sông làm ngập thung lũng mỗi mùa xuân, và nông dân lùa đàn gia súc lên đồi.",
        "th": "แม่น้ำท่วมหุบเขาทุกฤดูใบไม้ผลิ",
        "zh": "每年春天河水都会淹没山谷。",
        "ja": "毎年春になると川が谷を氾濫させます。",
    }
    for language, text in samples.items():
        assert d.detect(text) == language, (language, d.detect(text))
    assert d.detect("12345 !!!") == "und"
    for short in ("Results", "Conclusions", "Mortality rates", "Figure 3"):
        assert d.detect(short) == "und", short  # too little to tell: the document's language is used
    assert d.detect("東京大学", among={"en", "ja"}) == "ja"  # kanji alone, in a collection without Chinese
    # a short query is read among the collection's languages, weighted by how common each is
    assert d.detect("Bleddyn ap Cynfyn", among={"en": 99, "cy": 1}, prior={"en": 0.99, "cy": 0.01}) in {"en", "cy"}


def test_short_documents_take_the_language_of_their_batch_or_collection(tmp_path: Path, minilm: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    long_en = "The harbour master keeps the tide tables, and ships wait outside until the water rises."
    coll.add([Document("long", long_en), Document("short1", "Mortality rates")])
    coll.add([Document("short2", "Running shoes")])  # alone in its batch: the collection is English
    assert engine.indexes.get("c").languages == {"en": 3}
    assert coll.retrieve("run shoe", "bm25").hits[0].document_id == "short2"  # stemmed as English
    engine.close()


def test_a_document_mixing_languages_gets_a_language_per_section(tmp_path: Path, minilm: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    text = (
        "# English\n\nThe harbour master keeps the tide tables. Ships wait outside the harbour until the water "
        "rises high enough for them to enter safely.\n\n"
        "# Deutsch\n\nDer Hafenmeister führt die Gezeitentabellen. Die Schiffe warten vor dem Hafen, bis das "
        "Wasser hoch genug steigt, damit sie sicher einlaufen können."
    )
    coll.add([Document("mixed", text, "Harbour")])
    hits = coll.retrieve("Gezeitentabellen Hafenmeister", "bm25", k=5).hits
    languages = {h.chunk.language for h in hits}
    assert "de" in languages
    all_hits = coll.retrieve("harbour tide tables ships", "bm25", k=10).hits
    assert {h.chunk.language for h in all_hits} >= {"en", "de"}
    engine.close()


def test_a_language_set_by_hand_wins_and_bad_codes_are_refused(tmp_path: Path, minilm: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True, language="deu")  # ISO 639-3 codes are made canonical
    coll.add([Document("d1", "Ein kurzer Text.")])
    coll.add([Document("d2", "Short English text, marked Russian by hand.", language="ru-RU")])
    assert {d.id: d.language for d in coll.documents()} == {"d1": "", "d2": "ru"}
    assert engine.store.collection_language("c") == "de"
    assert coll.engine.indexes.get("c").languages == {"de": 1, "ru": 1}
    assert coll.add([Document("d2", "Short English text, marked Russian by hand.", language="ru")]).unchanged == 1
    with pytest.raises(WaypostError, match="ISO 639"):
        engine.collection("c", language="german!")
    with pytest.raises(WaypostError, match=r"'jp' is a country; its language is 'ja'"):
        engine.collection("c2", create=True, language="jp")  # bm25 found nothing in Japanese marked so
    with pytest.raises(WaypostError, match="no ISO 639-1 language code"):
        engine.collection("c3", create=True, language="xx")
    assert engine.collection("c4", create=True, language="mt").name == "c4"  # any ISO code, tuned or not
    engine.collection("c4", language="iw")  # a withdrawn code Java still writes: Hebrew
    assert engine.store.collection_language("c4") == "he"
    assert {c.name for c in engine.collections()} == {"c", "c4"}  # nothing made for a refused code
    engine.close()


def test_thai_and_chinese_sentences_and_cited_spans(tmp_path: Path, minilm: Embedder) -> None:
    zh = "黑豹队的防守丢了三百零八分。贾里德在职业生涯中有一百三十六次擒杀。他们赢得了比赛！"
    th = "ทีมรับของแพนเธอร์สเสียคะแนน 308 คะแนน ชอร์ตทำแซ็กได้ 11 ครั้ง เขาได้รับเลือกให้เล่นในโปรโบว์ล"
    assert [zh[s.start : s.end] for s in split_sentences(zh)][1] == "贾里德在职业生涯中有一百三十六次擒杀。"
    assert len(split_sentences(th)) == 3
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    coll.add([Document("zh1", zh), Document("th1", th)])
    for question, doc_id in (("贾里德有多少次擒杀？", "zh1"), ("ชอร์ตทำแซ็กได้กี่ครั้ง", "th1")):
        answer = coll.answer(question, strategy="bm25", k=2)
        assert answer.citations, question
        for c in answer.citations:
            stored = coll.get(c.document_id)
            assert stored is not None and stored.text[c.start : c.end] == c.text
        assert answer.citations[0].document_id == doc_id
    engine.close()


def test_fusion_trusts_the_embedder_by_its_coverage_of_the_language(tmp_path: Path, minilm: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    words = (
        "ข้าว น้ำ บ้าน ตลาด รถ ถนน โรงเรียน ครู นักเรียน แม่น้ำ ภูเขา ทะเล ปลา ไก่ หมู วัว ต้นไม้ ดอกไม้ ฝน ลม "
        "เมือง หมู่บ้าน วัด อาหาร ผลไม้ มะม่วง กล้วย เกษตรกร ชาวประมง เรือ สะพาน โรงพยาบาล หมอ ยา หนังสือ "
        "ห้องสมุด ร้านค้า เงิน ทอง ไฟฟ้า โทรศัพท์ เพลง เทศกาล สนามบิน รถไฟ"
    ).split()
    rng = random.Random(5)
    thai = [
        " ".join("".join(rng.choice(words) for _ in range(6)) for _ in range(7)) for _ in range(30)
    ]  # Thai writes words together, with spaces between phrases
    coll.add([Document(f"th{i}", t) for i, t in enumerate(thai)])
    notes = coll.retrieve(thai[7].split()[3], "hybrid").explanation.notes
    coverage = [n for n in notes if "dense coverage" in n]
    assert coverage and "(measured)" in coverage[0]
    value = float(coverage[0].split("dense coverage=")[1].split()[0])
    assert value < 0.5, coverage  # MiniLM cannot read Thai: BM25 leads
    uid = engine.store.version("c").rsplit("-g", 1)[0]
    remembered = engine.store.coverage(minilm.model_id, uid, "th")
    assert remembered is not None and remembered[1] >= 20  # remembered for this collection, not measured again
    english = engine.collection("en", create=True)
    english.add(
        [
            Document(f"e{i}", f"Report {i} on rice farming, floating markets and the river boats that serve them.")
            for i in range(3)
        ]
    )
    notes = english.retrieve("rice farming", "hybrid").explanation.notes
    assert any("dense coverage=1.00 (declared)" in n for n in notes)
    engine.close()
