"""A corpus uploaded through the browser while the app runs: seconds from upload to every
paradigm answering over it, and to everything built; the server's memory with three corpora
prepared.

Starts `python app.py` on the default corpus (the warm data directory, as a returning user
has it), waits until it is ready, then in headless Chromium uploads a JSONL corpus of about
`--passages` 100-token passages in the Corpora tab. The corpus is real text that no cache
has encoded: documents of the pooled corpus, each opened with a marker line so that its
passages are new to the content-addressed vector store. Polled through `gradio_client`'s
`list_corpora`: seconds until each paradigm answers over it (on stand-ins while its dense
index is encoded) and until its row says ready (every build done). Then one flat and one
funnel question over it through `/run`, and the server's resident memory (RSS) after the
default corpus alone, with the upload, and with `pooled` prepared too (three corpora).

    python -m bench.corpus_upload [--passages 50000] [--limit 3600]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.app_serving import PARADIGMS, Server, client_for
from bench.common import ROOT, save


def write_corpus(path: Path, passages: int) -> tuple[int, int]:
    """A JSONL corpus of pooled documents, each with a marker line, until it holds about
    `passages` 100-token passages (the engine's default chunker); returns (documents,
    passages)."""
    from engine.data.corpus import load_corpus
    from engine.documents import Document
    from engine.units.chunking import Chunker

    chunker = Chunker(max_tokens=100)
    documents = counted = 0
    pooled = load_corpus("pooled").documents
    with path.open("w", encoding="utf-8") as out:
        for copy in range(1, 100):  # a second copy (another marker) past 37k passages
            for doc in pooled:
                marked = Document(id=f"upload{copy}/{doc.id}", title=doc.title,
                                  text=f"Uploaded copy {copy} of {doc.title}.\n{doc.text}")
                out.write(json.dumps({"id": marked.id, "title": marked.title,
                                      "text": marked.text}) + "\n")
                documents += 1
                counted += len(chunker.split(marked))
                if counted >= passages:
                    return documents, counted
    return documents, counted


def upload_in_browser(url: str, path: Path, name: str) -> float:
    """Upload `path` as corpus `name` in the Corpora tab; returns the click's perf_counter."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.goto(url)
        page.get_by_role("tab", name="Corpora").click()
        page.locator("#fe-corpus-file input[type=file]").set_input_files(str(path))
        page.locator("#fe-corpus-name textarea").fill(name)
        page.wait_for_timeout(2000)  # the upload to the server ends before Add reads it
        clicked = time.perf_counter()
        page.locator("#fe-corpus-add").click()
        page.locator("#fe-corpora-message").get_by_text("is being read").wait_for(
            timeout=120_000)
        browser.close()
    return clicked


def corpus_row(client, name: str) -> dict:
    return next(r for r in json.loads(client.predict(api_name="/list_corpora"))
                if r["name"] == name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=50_000)
    parser.add_argument("--limit", type=float, default=3600,
                        help="stop waiting for the upload's builds after this many seconds")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="corpus-upload-"))
    source = work / "uploaded.jsonl"
    documents, passages = write_corpus(source, args.passages)
    print(f"corpus: {documents:,} documents, {passages:,} passages, "
          f"{source.stat().st_size / 2**20:.1f} MB", flush=True)
    name = f"upload{int(time.time())}"
    server = Server("wiki", args.data_dir, work / "app.log")
    result: dict = {"documents": documents, "passages": passages}
    try:
        server.seconds_to_first_page()
        client = client_for(server)
        server.seconds_to_ready(client, built=True)
        result["rss MB, default corpus"] = round(server.rss_mb())
        clicked = upload_in_browser(server.url, source, name)
        answering: dict[str, float] = {}
        row = corpus_row(client, name)
        while time.perf_counter() - clicked < args.limit:
            row = corpus_row(client, name)
            now = round(time.perf_counter() - clicked, 1)
            for paradigm in row["answering"]:
                answering.setdefault(paradigm, now)
            if row["status"] in ("ready", "failed"):
                break
            time.sleep(1)
        result["seconds to answering"] = {p: answering.get(p) for p in PARADIGMS}
        result["seconds to ready"] = (round(time.perf_counter() - clicked, 1)
                                      if row["status"] == "ready" else None)
        result["status"], result["error"] = row["status"], row["error"]
        print(json.dumps(result, indent=1), flush=True)
        question = "Which river flows through Budapest?"
        for paradigm in ("flat", "funnel"):
            started = time.perf_counter()
            trace = json.loads(client.predict(question, paradigm, "", name, api_name="/run"))
            result[f"{paradigm} over it"] = {
                "answer": trace["answer"], "seconds": round(time.perf_counter() - started, 2),
                "stand-in": any(s.get("settings", {}).get("stand_in")
                                for s in trace["stages"])}
        result["rss MB, default + upload"] = round(server.rss_mb())
        started = time.perf_counter()
        while True:  # the first request starts preparing it; it answers once loaded
            try:
                trace = json.loads(client.predict(question, "flat", "", "pooled",
                                                  api_name="/run"))
                break
            except Exception as err:  # noqa: BLE001 - not ready yet: ask again
                if time.perf_counter() - started > args.limit:
                    raise
                print("pooled:", str(err)[:120], flush=True)
                time.sleep(5)
        result["pooled first answer s"] = round(time.perf_counter() - started, 1)
        result["pooled answer"] = trace["answer"]
        result["rss MB, three corpora"] = round(server.rss_mb())
    finally:
        server.stop()
    print(json.dumps(result, indent=1))
    print("saved", save("corpus_upload", result))


if __name__ == "__main__":
    main()
