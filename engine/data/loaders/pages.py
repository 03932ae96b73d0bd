"""Documents as users have them: HTML pages and PDF files, read into documents with
well-kept libraries (Beautiful Soup over lxml for HTML, pypdf for PDF).

An HTML page becomes a document per section: its main text (the page's `<main>`,
`[role=main]`, `<article>` or Sphinx's `div.body`, else its `<body>`), split at its h1-h3
headings, each section titled by the page and its heading and named by the heading's anchor
("library/functions#len"); scripts, styles, navigation, headers, footers, forms and
permalink marks are dropped, and the site's sidebars of a page without a main element. A
PDF becomes a document per page with text ("report#page=3"). What yields no text is skipped
with the reason (`Skipped`), never guessed at: a scanned PDF without a text layer, an
encrypted one, a page of navigation only.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from engine.documents import Document

HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
# what is never a page's text
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "nav", "header", "footer",
                "form", "button", "iframe", "head")
DROPPED_ROLES = ("navigation", "banner", "contentinfo", "search")
DROPPED_CLASSES = ("headerlink", "sphinxsidebar", "related", "navigation", "breadcrumbs",
                   "footer", "skip-link")
# a page without a main element: its asides and sidebars are the site's, not the text's
# (inside one, an aside is the text's own: Sphinx's sidebar directive, a boxed example)
CHROME_TAGS, CHROME_ROLES, CHROME_CLASSES = ("aside",), ("complementary",), ("sidebar",)
BLOCKS = ("p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd",
          "pre", "blockquote", "table", "tr", "td", "th", "caption", "figure",
          "figcaption", "h4", "h5", "h6", "br", "hr")
SECTION_HEADINGS = ("h1", "h2", "h3")
_MARK = "\x00"  # a heading's place in the page's text
_LOOKS_HTML = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]",
                         re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Skipped:
    """A file (or a zip's member) no document came from, and why."""

    name: str
    why: str

    def __str__(self) -> str:
        return f"{self.name} ({self.why})"


def looks_like_html(raw: bytes) -> bool:
    """Whether a file's bytes are an HTML page (a .txt holding one is read as HTML)."""
    return bool(_LOOKS_HTML.match(raw[:4096]))


def html_documents(doc_id: str, raw: bytes, source: str, fallback_title: str
                   ) -> list[Document]:
    """The sections of HTML page `raw` as documents (see the module), ids under `doc_id`;
    [] when the page holds no main text."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(raw, "lxml")
    page_title = _page_title(soup) or fallback_title
    main = (soup.find("main") or soup.find(attrs={"role": "main"}) or soup.find("article")
            or soup.find("div", class_="body"))
    chrome = main is None
    return _sections(doc_id, "".join(_text(soup.body or soup if chrome else main, chrome)),
                     page_title, source)


def _dropped(tag, chrome: bool) -> bool:
    classes, role = tag.get("class") or (), tag.get("role")
    if tag.name in DROPPED_TAGS or role in DROPPED_ROLES or \
            any(c in DROPPED_CLASSES for c in classes):
        return True
    return chrome and (tag.name in CHROME_TAGS or role in CHROME_ROLES
                       or any(c in CHROME_CLASSES for c in classes))


def _text(node, chrome: bool) -> Iterator[str]:
    """The text of `node` with its blocks apart (blank lines) and its h1-h3 headings as
    marks (anchor and text), what is never text left out; one walk, nothing changed."""
    from bs4 import Comment, NavigableString, Tag

    for child in node.children:
        if isinstance(child, Comment):
            continue
        if isinstance(child, NavigableString):
            yield str(child)
        elif isinstance(child, Tag) and not _dropped(child, chrome):
            if child.name in SECTION_HEADINGS:
                anchor = child.get("id") or (child.parent.get("id") or "")
                text = _heading_text("".join(_text(child, chrome)))
                yield f"\n\n{_MARK}{anchor}{_MARK}{text}\n\n"
            elif child.name in BLOCKS:
                yield "\n\n"
                yield from _text(child, chrome)
                yield "\n\n"
            else:
                yield from _text(child, chrome)


def _page_title(soup) -> str:
    heading = soup.find("h1")
    text = _heading_text(heading.get_text(" ")) if heading is not None else ""
    return text or (" ".join(soup.title.get_text(" ").split()) if soup.title else "")


def _heading_text(text: str) -> str:
    """A heading's words on one line, without Sphinx's permalink mark."""
    return " ".join(text.split()).rstrip("¶").strip()


def _sections(doc_id: str, text: str, page_title: str, source: str) -> list[Document]:
    documents: list[Document] = []
    anchor, heading, paragraphs = "", "", []
    seen: set[str] = set()

    def close() -> None:
        body = "\n\n".join(paragraphs).strip()
        if not body:
            return
        key = anchor or f"s{len(documents) + 1}"
        while key in seen:
            key = f"{key}-{len(documents) + 1}"
        seen.add(key)
        title = page_title if not heading or heading == page_title else \
            f"{page_title}: {heading}"
        documents.append(Document(id=f"{doc_id}#{key}" if documents or anchor else doc_id,
                                  title=title, text=body, sources=(source,)))

    for block in re.split(r"\n\s*\n", text):
        if block.strip().startswith(_MARK):
            close()
            _, anchor, heading = block.strip().split(_MARK, 2)
            paragraphs = []
            continue
        line = " ".join(block.split())
        if line:
            paragraphs.append(line)
    close()
    return documents


def pdf_documents(doc_id: str, raw: bytes, source: str, title: str) -> list[Document]:
    """A document per page of PDF `raw` that has text ("<doc_id>#page=N"); [] when none has.

    Raises:
        ValueError: an encrypted PDF or one pypdf cannot read, with the reason.
    """
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            raise ValueError("encrypted: save it without a password first")
        pages = [page.extract_text() or "" for page in reader.pages]
    except PdfReadError as err:
        raise ValueError(f"not a readable PDF ({err})") from None
    documents = []
    for number, text in enumerate(pages, start=1):
        body = "\n".join(" ".join(line.split()) for line in text.splitlines()).strip()
        if body:
            documents.append(Document(id=f"{doc_id}#page={number}",
                                      title=f"{title}, page {number}", text=body,
                                      sources=(source,)))
    return documents


def page_documents(name: str, raw: bytes, source: str) -> tuple[list[Document], str]:
    """(the documents of one HTML or PDF file `name` (a relative path), why none came
    from it or "")."""
    path = PurePosixPath(name)
    doc_id, title = path.with_suffix("").as_posix(), path.stem.replace("_", " ")
    if path.suffix.lower() in PDF_SUFFIXES:
        try:
            documents = pdf_documents(doc_id, raw, source, title)
        except ValueError as err:
            return [], str(err)
        return documents, "" if documents else \
            "no page has a text layer (a scanned PDF? run OCR on it first)"
    documents = html_documents(doc_id, raw, source, title)
    return documents, "" if documents else \
        "no main text once scripts and navigation are dropped"
