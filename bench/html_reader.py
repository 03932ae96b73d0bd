"""The HTML reader on a corpus no one here wrote: the Python 3.11 library reference (317
pages, Debian's python3.11-doc: `apt-get install python3.11-doc`), against two hand
conversions a user would write, each cut into the same 100-token passages flat indexes.

- naive: every page's whole text (BeautifulSoup's get_text of the page), one document a page;
- careful: the text of Sphinx's `div.body` alone (a user who read the markup), one a page;
- ours: engine.data.loaders.pages, a document per h1-h3 section.

Per reader: documents, passages, tokens, the passages holding navigation or footer text
(lines Sphinx puts around every page: "Previous topic", "Report a Bug", ...), and how much
of the careful conversion's words ours keeps (multiset recall) and adds. Then BM25 over
each reader's passages, asked for 40 functions by name ("json.dumps"): whether the top
passage comes from the page that documents it.

    python -m bench.html_reader [--root /usr/share/doc/python3.11/html/library]
"""

from __future__ import annotations

import argparse
import collections
import re
import time
from pathlib import Path

from bench.common import markdown_table, save

BOILERPLATE = ("Previous topic", "Next topic", "This Page", "Report a Bug", "Show Source",
               "Navigation", "Copyright", "Python Software Foundation", "Quick search")
# (a function, the page that documents it)
ASKED = [("json.dumps", "json"), ("os.path.join", "os.path"), ("re.sub", "re"),
         ("itertools.groupby", "itertools"), ("functools.lru_cache", "functools"),
         ("collections.Counter", "collections"), ("subprocess.run", "subprocess"),
         ("shutil.rmtree", "shutil"), ("pathlib.Path.glob", "pathlib"),
         ("datetime.timedelta", "datetime"), ("csv.DictReader", "csv"),
         ("heapq.heappush", "heapq"), ("bisect.insort", "bisect"),
         ("random.shuffle", "random"), ("statistics.median", "statistics"),
         ("math.isclose", "math"), ("zipfile.ZipFile", "zipfile"), ("tarfile.open", "tarfile"),
         ("gzip.open", "gzip"), ("hashlib.sha256", "hashlib"), ("hmac.compare_digest", "hmac"),
         ("secrets.token_hex", "secrets"), ("socket.create_connection", "socket"),
         ("threading.Lock", "threading"), ("asyncio.gather", "asyncio-task"),
         ("argparse.ArgumentParser.add_argument", "argparse"), ("logging.getLogger", "logging"),
         ("unittest.mock.patch", "unittest.mock"), ("tempfile.mkdtemp", "tempfile"),
         ("glob.glob", "glob"), ("fnmatch.fnmatch", "fnmatch"), ("pickle.dumps", "pickle"),
         ("sqlite3.connect", "sqlite3"), ("urllib.parse.urlencode", "urllib.parse"),
         ("base64.b64encode", "base64"), ("struct.pack", "struct"),
         ("textwrap.dedent", "textwrap"), ("difflib.SequenceMatcher", "difflib"),
         ("dataclasses.field", "dataclasses"), ("contextlib.contextmanager", "contextlib")]


def naive(path: Path):
    from bs4 import BeautifulSoup

    from engine.documents import Document

    soup = BeautifulSoup(path.read_bytes(), "lxml")
    return [Document(path.stem, path.stem, soup.get_text("\n"), ("naive",))]


def careful(path: Path):
    from bs4 import BeautifulSoup

    from engine.documents import Document

    soup = BeautifulSoup(path.read_bytes(), "lxml")
    body = soup.find("div", class_="body") or soup.body
    return [Document(path.stem, path.stem, body.get_text("\n"), ("careful",))]


def ours(path: Path):
    from engine.data.loaders.pages import page_documents

    return page_documents(path.name, path.read_bytes(), "ours")[0]


def words(text: str) -> collections.Counter:
    """Its words, lower-cased, as BM25 reads them apart (json.dumps: json, dumps)."""
    return collections.Counter(re.findall(r"\w+", text.lower()))


def measured(name: str, read, files: list[Path]) -> tuple[dict, list, dict]:
    from engine.documents import Corpus
    from engine.index.bm25 import bm25_index
    from engine.text import count_tokens
    from engine.units.build import UnitConfig, build_units
    from engine.units.chunking import Chunker

    started = time.perf_counter()
    documents, by_page = [], {}
    for path in files:
        found = read(path)
        documents += found
        by_page[path.stem] = words(" ".join(f"{d.title} {d.text}" for d in found))
    seconds = time.perf_counter() - started
    corpus = Corpus(name, tuple(documents))
    config = UnitConfig("passages", chunker=Chunker(100))
    passages = build_units(corpus, config)
    texts = [p.text for p in passages]
    noisy = sum(any(b in t for b in BOILERPLATE) for t in texts)
    index = bm25_index(corpus, config)
    hits = top3 = 0
    for function, page in ASKED:
        found = [c.unit.doc_ids[0].split("#")[0] for c in index.search(function, 3)]
        hits += found[:1] == [page]
        top3 += page in found
    row = {"reader": name, "seconds": round(seconds, 1), "documents": len(documents),
           "passages": len(passages), "tokens": sum(count_tokens(t) for t in texts),
           "boilerplate passages": noisy, "boilerplate share": round(noisy / len(texts), 3),
           "BM25 top-1 on the function's page": f"{hits}/{len(ASKED)}",
           "top-3": f"{top3}/{len(ASKED)}"}
    return row, texts, by_page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="/usr/share/doc/python3.11/html/library")
    args = parser.parse_args()
    files = sorted(Path(args.root).glob("*.html"))
    if not files:
        raise SystemExit(f"No HTML pages under {args.root}: apt-get install python3.11-doc")
    rows, pages = [], {}
    for name, read in (("naive", naive), ("careful", careful), ("ours", ours)):
        row, _, by_page = measured(name, read, files)
        rows.append(row)
        pages[name] = by_page
    reference = pages["careful"]
    for row in rows:
        kept = sum(sum((pages[row["reader"]][p] & reference[p]).values()) for p in reference)
        total = sum(sum(c.values()) for c in reference.values())
        extra = sum(sum((pages[row["reader"]][p] - reference[p]).values()) for p in reference)
        row["careful words kept"] = round(kept / total, 3)
        row["words beyond careful"] = extra
    headers = list(rows[0])
    print(f"{len(files)} pages of {args.root}\n")
    print(markdown_table(headers, [[r[h] for h in headers] for r in rows]))
    save("html_reader", {"pages": len(files), "rows": rows})


if __name__ == "__main__":
    main()
