"""The web playground in real Chromium (Debian's ``chromium``, driven by Playwright): sign in, create a
collection, upload files and watch the job's progress, run ``auto`` and read its reasoning, compare two
pipelines, stream an answer and click a citation to see the cited span highlighted. Each step writes a
screenshot to ``tmp_path`` (or to ``WAYPOST_SCREENSHOTS=dir`` to keep them)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.server_fixtures import LiveServer

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
INTERMEDIATE = ("parsing", "chunking", "embedding", "indexing")
XSS_NAME = "<img src=x onerror=alert(1)>.txt"

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium (make install-dev)"
)


def corpus() -> list[dict[str, Any]]:
    """Files for the upload: two short ones to find, a long one so the job has stages to watch, and one whose
    name is markup (it must show as text)."""
    crews, seasons, places = ("ferry", "barge", "lock", "weir", "bridge"), ("ice", "flood", "drought"), "mill quay dam"
    rivers = "\n\n".join(
        f"Gauge {i} on the Danube, kilometre {i * 7}, read {i % 13} metres of water on day {i}. "
        f"The {crews[i % 5]} crew logged the {seasons[i % 3]} season and the silt carried past the "
        f"{places.split()[i % 3]} near marker {i * 3}."
        for i in range(120)
    )
    files = {
        "paris.txt": "Paris is the capital of France. The Seine flows through it. The Louvre holds the Mona Lisa.",
        "berlin.md": "# Berlin\nBerlin is the capital of Germany.\n\n## Sights\nThe Brandenburg Gate is in Berlin.\n",
        "danube.txt": rivers,
        XSS_NAME: "A file whose name looks like markup; the page must show it as plain text.",
    }
    return [{"name": n, "mimeType": "text/plain", "buffer": t.encode()} for n, t in files.items()]


class Shots:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: list[Path] = []
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, page: Any, name: str) -> None:
        path = self.folder / f"{len(self.taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)


def offline_router(url: str, outside: list[str]) -> Callable[[Any], None]:
    """A Playwright route handler that lets requests to ``url``'s server through and aborts (and records in
    ``outside``) every other."""
    origin = urlsplit(url).netloc

    def route_request(route: Any) -> None:
        if urlsplit(route.request.url).netloc != origin:
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    return route_request


@needs_chromium
def test_playground_end_to_end(server: LiveServer, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    shots = Shots(Path(os.environ.get("WAYPOST_SCREENSHOTS") or tmp_path / "screenshots"))
    name = f"playground-{uuid.uuid4().hex[:8]}"
    api = server.client("alpha:write")
    problems: list[str] = []
    outside: list[str] = []
    offline = offline_router(server.url, outside)  # the page must never reach past this server

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.set_default_timeout(20_000)
            page.route("**/*", offline)
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))

            # 1. sign in
            page.goto(f"{server.url}/")
            page.fill("#key", "wp_not_a_real_key_x")
            page.click("#signin-btn")
            expect(page.locator("#toast")).to_contain_text("refused")
            problems.clear()  # the browser logs that refused request (401) as a console error
            page.fill("#key", server.keys["alpha:write"])
            shots(page, "signin")
            page.click("#signin-btn")
            expect(page.locator("#who-tenant")).to_have_text("alpha")
            expect(page.locator("#who-scopes")).to_contain_text("write")
            page.reload()  # the key is kept for this tab (sessionStorage), so a reload stays signed in
            expect(page.locator("#who-tenant")).to_have_text("alpha")

            # 2. a fresh collection, made in the page
            page.fill("#new-collection-name", name)
            page.fill("#new-collection-desc", "capitals and a river")
            page.click("#new-collection button[type=submit]")
            expect(page.locator(f'#collections li.active[data-name="{name}"]')).to_be_visible()
            shots(page, "collection")

            # 3. upload and watch the job's progress (its states come from the job's event stream)
            page.set_input_files("#upload-files", corpus())
            page.click("#upload-btn")
            job = page.locator("#jobs .job").first
            expect(job).to_be_visible()
            shots(page, "upload-progress")
            expect(job).to_have_attribute("data-state", "succeeded", timeout=60_000)
            expect(job.locator(".bar")).to_have_class("bar succeeded")
            trail = job.locator(".job-trail").inner_text()
            assert trail.startswith("queued") and trail.endswith("succeeded"), trail
            assert any(s in trail for s in INTERMEDIATE), f"no live progress between queued and succeeded: {trail}"
            assert "4 added" in job.locator(".job-counts").inner_text()
            expect(page.locator("#documents li.item")).to_have_count(4)
            expect(page.locator("#doc-count")).to_have_text("4")
            expect(page.locator("#documents")).to_contain_text(XSS_NAME)  # markup shown as text ...
            assert page.locator("#documents img").count() == 0  # ... never parsed as HTML
            shots(page, "upload-done")

            # 4. auto: the route's pipeline, confidence and reasoning; explain stages; hit cards
            page.select_option("#q-strategy", "auto-merge")  # parameter inputs come from /v1/strategies
            expect(page.locator("#q-params [name=tokens]")).to_have_attribute("placeholder", "1024")
            page.select_option("#q-strategy", "auto")
            expect(page.locator("#q-params [name]")).to_have_count(0)
            query = "Which river flows through the capital of France?"
            page.fill("#q", query)
            page.check("#q-explain")
            page.click("#q-run")
            route_box = page.locator("#q-out .route")
            expect(route_box).to_be_visible()
            expected = api.post("/v1/retrieve", json={"collection": name, "query": query, "k": 10}).json()
            route = expected["route"]
            shown = float(route_box.locator(".route-confidence").inner_text())
            assert 0.0 <= shown <= 1.0 and abs(shown - route["confidence"]) <= 0.0051, (shown, route)
            expect(route_box.locator(".route-pipeline")).to_have_text(route["label"])
            expect(route_box.locator(".route-reasons li").first).to_have_text(route["reasoning"])
            expect(page.locator("#q-out .explain .stage").first).to_be_visible()
            cards = page.locator("#q-out .hits .hit")
            expect(cards).to_have_count(len(expected["hits"]))
            top = expected["hits"][0]
            expect(cards.first.locator(".doc-id")).to_have_text(top["document_id"])
            expect(cards.first.locator(".span")).to_have_text(f"chars {top['span'][0]}–{top['span'][1]}")
            shots(page, "auto")

            # filters as JSON: a bad one is refused in the page, a good one narrows the hits
            page.select_option("#q-strategy", "dense")
            page.uncheck("#q-explain")
            page.fill("#q-filters", '{"format": md}')
            page.click("#q-run")
            expect(page.locator("#q-filters.invalid")).to_have_count(1)
            expect(page.locator("#toast")).to_contain_text("not valid JSON")
            page.fill("#q-filters", '{"format": "md"}')
            page.click("#q-run")
            expect(page.locator("#q-filters.invalid")).to_have_count(0)
            expect(page.locator("#q-out .route")).to_have_count(0)
            expect(page.locator("#q-out .hit .doc-id")).to_have_text(["berlin.md", "berlin.md"])
            page.fill("#q-filters", "")

            # collection auto: the page sends "auto" and shows which collection(s) waypost chose
            page.check("#q-auto-collection")
            page.click("#q-run")
            chose = api.post("/v1/retrieve", json={"collection": "auto", "query": query, "strategy": "dense"}).json()
            expect(page.locator("#q-out .collection-choice strong")).to_have_text(", ".join(chose["collections"]))
            page.uncheck("#q-auto-collection")

            # 5. two pipelines side by side with their overlap
            page.click(".tab[data-tab=compare]")
            page.fill("#c-q", "capital of Germany")
            selects = page.locator("#c-pipelines select")
            expect(selects).to_have_count(2)
            selects.nth(0).select_option("dense")
            selects.nth(1).select_option("bm25")
            page.fill("#c-k", "2")
            page.click("#c-run")
            columns = page.locator("#c-out .columns .column")
            expect(columns).to_have_count(2)
            body = {"collection": name, "query": "capital of Germany", "k": 2,
                    "pipelines": [{"strategy": "dense"}, {"strategy": "bm25"}]}  # fmt: skip
            compared = api.post("/v1/compare", json=body).json()
            overlap = float(page.locator("#c-out .overlap-value").inner_text())
            assert abs(overlap - compared["overlap"][0][1]) <= 0.0051, (overlap, compared["overlap"])
            expect(columns.nth(0)).to_have_attribute("data-pipeline", "dense")
            expect(columns.nth(1)).to_have_attribute("data-pipeline", "bm25")
            for column, run in zip(columns.all(), compared["runs"], strict=True):
                expect(column.locator(".hit")).to_have_count(len(run["hits"]))
            expect(page.locator("#c-out .hit.shared")).to_have_count(
                sum(h["document_id"] in compared["shared_documents"] for r in compared["runs"] for h in r["hits"])
            )
            shots(page, "compare")

            # 6. a streamed answer; a click on a citation highlights the cited span in its document
            page.click(".tab[data-tab=answer]")
            question = "What is the capital of France?"
            page.fill("#a-q", question)
            page.click("#a-run")
            status = page.locator("#a-out .answer-status.done")
            expect(status).to_be_visible()
            assert "token event" in status.inner_text()
            expect(page.locator("#a-out .sources .hit").first).to_be_visible()  # the `retrieval` event
            answer = api.post("/v1/answer", json={"collection": name, "question": question}).json()
            expect(page.locator("#a-out .answer-text")).to_have_text(answer["answer"])
            cited = answer["citations"][0]
            shots(page, "answer")
            page.click(f'#a-out .answer-text .cite[data-n="{cited["n"]}"]')
            mark = page.locator("#viewer-text mark")
            expect(mark).to_have_text(cited["text"])
            assert mark.get_attribute("data-start") == str(cited["span"][0])
            document = api.get(f"/v1/collections/{name}/documents/{cited['document_id']}").json()
            assert document["text"][cited["span"][0] : cited["span"][1]] == mark.inner_text()
            expect(page.locator("#viewer-title")).to_have_text(document["title"] or document["id"])
            shots(page, "citation")

            # 7. delete a document (two clicks: arm, confirm), then the collection
            page.click("#viewer-close")
            gone = page.locator('#documents li.item[data-doc="danube.txt"] button.danger')
            gone.click()
            gone.click()
            expect(page.locator("#documents li.item")).to_have_count(3)
            assert api.get(f"/v1/collections/{name}/documents/danube.txt").status_code == 404
            drop = page.locator(f'#collections li[data-name="{name}"] button.danger')
            drop.click()
            drop.click()
            expect(page.locator(f'#collections li[data-name="{name}"]')).to_have_count(0)
            assert api.get(f"/v1/collections/{name}").status_code == 404
            shots(page, "deleted")
        finally:
            browser.close()
            api.close()
    assert not problems, problems
    assert not outside, f"the page reached outside the server: {outside}"
    assert len(shots.taken) == 9 and all(s.stat().st_size > 10_000 for s in shots.taken)


def test_playground_is_served_beside_the_api(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        index = c.get("/")
        assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in index.headers["content-security-policy"]
        assert '<script src="/static/app.js"' in index.text
        for asset, kind in (("app.js", "javascript"), ("app.css", "text/css"), ("favicon.svg", "image/svg+xml")):
            r = c.get(f"/static/{asset}")
            assert r.status_code == 200 and kind in r.headers["content-type"], asset
            assert "https://" not in r.text and "http://" not in r.text.replace("http://www.w3.org/2000/svg", "")
        assert c.get("/static/%2e%2e/playground.py").status_code == 404
        assert c.get("/static/nothing.js").status_code == 404
        # the API's own paths are untouched
        assert c.get("/healthz").json() == {"status": "ok"}
        assert c.get("/readyz").status_code == 200
        assert c.get("/v1/whoami").status_code == 401
        assert c.get("/v1/whoami", headers=server.headers("alpha:read")).json()["tenant"] == "alpha"
        docs = c.get("/docs")
        assert docs.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in docs.text and "cdn." not in docs.text
        for asset, kind in (("swagger-ui-bundle.js", "javascript"), ("swagger-ui.css", "text/css")):
            r = c.get(f"/docs-assets/{asset}")
            assert r.status_code == 200 and kind in r.headers["content-type"], asset
        paths = c.get("/openapi.json").json()["paths"]
        assert "/" not in paths and "/v1/retrieve" in paths


@needs_chromium
def test_the_api_docs_render_offline(server: LiveServer, tmp_path: Path) -> None:
    """``/docs`` in real Chromium with every request past this server refused: Swagger UI comes from here."""
    from playwright.sync_api import expect, sync_playwright

    outside: list[str] = []
    problems: list[str] = []
    offline = offline_router(server.url, outside)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            page.route("**/*", offline)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(f"{server.url}/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("waypost")
            expect(page.locator("#operations-retrieval-retrieve_v1_retrieve_post")).to_be_visible()
            page.screenshot(path=str(Path(os.environ.get("WAYPOST_SCREENSHOTS") or tmp_path) / "docs.png"))
        finally:
            browser.close()
    assert outside == [] and problems == [], (outside, problems)
