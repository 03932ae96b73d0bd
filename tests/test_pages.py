"""Documents as users have them (issue 67: the Python documentation's HTML was refused,
"the zip holds no .txt or .md files"): HTML pages by section, scripts and navigation
dropped; PDFs by page; a .txt holding HTML read as HTML; every file skipped said, with why."""

from __future__ import annotations

import zipfile

from engine.data.ingest import read_documents
from engine.data.loaders import read_dataset
from engine.data.loaders.pages import page_documents
from engine.data.loaders.user import file_documents

PAGE = b"""<!DOCTYPE html>
<html><head><title>json - JSON encoder and decoder</title>
<script>var tracking = "never text";</script><style>.x {color: red}</style></head>
<body>
<div class="related" role="navigation"><a href="index.html">Previous topic</a></div>
<header>Python 3.11 documentation</header>
<div class="sphinxsidebar"><h3>This Page</h3><a href="#">Show Source</a></div>
<div class="body" role="main">
 <section id="module-json">
  <h1>json &mdash; JSON encoder and decoder<a class="headerlink" href="#x">&para;</a></h1>
  <p>JSON is a lightweight data interchange format inspired by
     <code>JavaScript</code> object literal syntax.</p>
  <section id="basic-usage">
   <h2>Basic Usage<a class="headerlink" href="#basic-usage">&para;</a></h2>
   <dl><dt>json.dump(obj, fp)</dt><dd><p>Serialize <em>obj</em> as a JSON formatted
       stream to fp.</p></dd></dl>
   <ul><li>one item</li><li>another item</li></ul>
  </section>
  <section id="encoders"><h2>Encoders</h2><p>Extensible JSON encoder.</p></section>
 </section>
</div>
<footer>&copy; Copyright 2001-2023, Python Software Foundation. Report a Bug</footer>
</body></html>"""


def _pdf(pages: list[str]) -> bytes:
    """A minimal PDF whose pages show `pages` (an empty string: a page without text)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET" if text else ""
        content = len(objects) + 2
        kids.append(len(objects) + 1)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents "
                       f"{content} 0 R /Resources << /Font << /F1 {len(pages) * 2 + 3} 0 R "
                       ">> >> >>")
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects[1] = (f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count "
                  f"{len(kids)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return out


def test_an_html_page_becomes_its_sections_without_scripts_or_navigation():
    documents, why = page_documents("library/json.html", PAGE, "docs")
    assert why == ""
    assert [d.id for d in documents] == ["library/json#module-json",
                                         "library/json#basic-usage", "library/json#encoders"]
    assert [d.title for d in documents] == [
        "json — JSON encoder and decoder", "json — JSON encoder and decoder: Basic Usage",
        "json — JSON encoder and decoder: Encoders"]
    assert documents[0].text == ("JSON is a lightweight data interchange format inspired by "
                                 "JavaScript object literal syntax.")
    assert documents[1].text.split("\n\n") == [
        "json.dump(obj, fp)", "Serialize obj as a JSON formatted stream to fp.", "one item",
        "another item"]
    every = " ".join(d.text + d.title for d in documents)
    for never in ("tracking", "color", "Previous topic", "Show Source", "This Page",
                  "Copyright", "Report a Bug", "¶", "3.11 documentation"):
        assert never not in every


def test_an_aside_is_the_texts_inside_the_main_text_and_the_sites_outside_it():
    boxed = PAGE.replace(b"<p>Extensible JSON encoder.</p>",
                         b"<p>Extensible JSON encoder.</p><aside class='sidebar'><p>Hello "
                         b"World example</p></aside>")
    assert "Hello World example" in page_documents("json.html", boxed, "d")[0][-1].text
    site = (b"<html><body><aside class='sidebar'>Popular posts</aside><h1>Notes</h1>"
            b"<p>Body text.</p></body></html>")
    (note,) = page_documents("note.html", site, "d")[0]
    assert note.text == "Body text." and note.title == "Notes"


def test_a_pdf_becomes_a_document_per_page_with_text():
    documents, why = page_documents("reports/q3.pdf", _pdf(["Revenue rose", "",
                                                            "Costs fell"]), "docs")
    assert why == "" and [(d.id, d.title, d.text) for d in documents] == [
        ("reports/q3#page=1", "q3, page 1", "Revenue rose"),
        ("reports/q3#page=3", "q3, page 3", "Costs fell")]
    assert page_documents("scan.pdf", _pdf(["", ""]), "docs") == (
        [], "no page has a text layer (a scanned PDF? run OCR on it first)")
    assert page_documents("broken.pdf", b"%PDF-1.4 not really", "docs")[1].startswith(
        "not a readable PDF")


def test_a_folder_and_a_zip_say_what_they_skipped_and_why(tmp_path):
    folder = tmp_path / "site"
    (folder / "library").mkdir(parents=True)
    (folder / "library" / "json.html").write_bytes(PAGE)
    (folder / "notes.txt").write_bytes(PAGE)  # a .txt holding HTML: read as HTML, no tags
    (folder / "q3.pdf").write_bytes(_pdf(["Revenue rose"]))
    (folder / "logo.png").write_bytes(b"\x89PNG")
    (folder / "nav.html").write_bytes(b"<html><body><nav>Home</nav></body></html>")
    documents = read_dataset(folder).documents
    assert {d.id for d in documents} >= {"library/json#basic-usage", "notes#basic-usage",
                                         "q3#page=1"}
    assert not any("<" in d.text for d in documents)
    _, skipped = file_documents(((p.relative_to(folder).as_posix(), p.read_bytes)
                                 for p in sorted(folder.rglob("*")) if p.is_file()), "site")
    assert [str(s) for s in skipped] == [
        "logo.png (not a .txt, .md, .html or .pdf file)",
        "nav.html (no main text once scripts and navigation are dropped)"]
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("site/library/json.html", PAGE)
        out.writestr("site/logo.png", b"\x89PNG")
    assert [d.id for d in read_documents(archive)][0] == "site/library/json#module-json"


def test_one_page_uploaded_alone_is_a_corpus(tmp_path):
    from engine.data.ingest import check_source

    page = tmp_path / "json.html"
    page.write_bytes(PAGE)
    assert check_source(page) == page
    assert [d.id for d in read_documents(page)][1] == "json#basic-usage"
    empty = tmp_path / "nav.html"
    empty.write_bytes(b"<html><body><nav>Home</nav></body></html>")
    import pytest

    from engine.errors import DataFormatError

    with pytest.raises(DataFormatError, match="yields no document: no main text"):
        read_documents(empty)
