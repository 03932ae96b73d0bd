"""The app with logins tried as an attacker would (issue 54): files outside what may be
served, by path traversal, by a symlink and by naming a server path as an upload; script in
run names, notes and corpus titles; SQL in every filter. The routes without a session, with
a forged, replayed or expired one, a viewer on admin routes and a thousand wrong passwords
are tried in tests/test_roles.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.logins import PASSWORDS, client_of, logged_in_page, login

pytestmark = pytest.mark.live

SECRET = "a line no route may serve"


def _get(opener, url: str) -> tuple[int, str]:
    try:
        with opener.open(url, timeout=30) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def test_no_file_route_serves_a_file_outside_what_it_may(logged_in_app, tmp_path):
    """Logged in as an admin: /file=, /file/, /proxy=, the assets and static routes with
    traversal (plain and encoded), an absolute path, and a symlink in Gradio's upload folder
    pointing at a secret; none serves the secret."""
    from gradio.utils import get_upload_folder

    url, _, _ = logged_in_app
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    uploads = Path(get_upload_folder())
    uploads.mkdir(parents=True, exist_ok=True)
    link = uploads / "fe-attack-link.txt"
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    status, opener = login(url, "admin", PASSWORDS["admin"])
    assert status == 200
    tried = [f"/gradio_api/file={secret}", f"/gradio_api/file={link}",
             f"/gradio_api/file/{secret}", "/gradio_api/file=../../../../" + str(secret),
             "/gradio_api/file=..%2F..%2F..%2F..%2F" + str(secret).lstrip("/").replace(
                 "/", "%2F"),
             f"/gradio_api/proxy=file://{secret}", "/assets/../../../../" + str(secret),
             "/static/..%2F..%2F..%2F..%2F" + str(secret).lstrip("/").replace("/", "%2F"),
             "/svelte/../../../../" + str(secret)]
    served = []
    try:
        for path in tried:
            status, body = _get(opener, url + path)
            if SECRET in body:
                served.append(f"{path} -> {status}")
    finally:
        link.unlink(missing_ok=True)
    assert served == []


@pytest.mark.parametrize("route,args", [
    ("add_corpus", ("FILE", "stolen", False)),
    ("import_traces", ("FILE", "", "")),
    ("add_question_file", ("tiny", "stolen", "FILE")),
    ("import_judgments", ("tiny (stolen)", "FILE", "")),
])
def test_an_upload_parameter_naming_a_server_path_is_refused(logged_in_app, tmp_path, route,
                                                              args):
    """A request that names a file on the server as if it had been uploaded (its path, or
    a traversal out of Gradio's upload folder), sent by raw HTTP as an admin (the
    gradio_client would upload a local file instead): refused, the file never read."""
    from gradio.utils import get_upload_folder

    url, _, _ = logged_in_app
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"id": "s", "title": "s", "text": SECRET}) + "\n")
    status, opener = login(url, "admin", PASSWORDS["admin"])
    assert status == 200
    for path in (str(secret), f"{get_upload_folder()}/../../{secret}"):
        data = [{"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": "c.jsonl"}
                if a == "FILE" else a for a in args]
        request = urllib.request.Request(
            f"{url}/gradio_api/call/{route}", json.dumps({"data": data}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with opener.open(request, timeout=30) as answer:
            event = json.loads(answer.read())["event_id"]
        status, stream = _get(opener, f"{url}/gradio_api/call/{route}/{event}")
        assert "event: error" in stream and "event: complete" not in stream, stream
        assert SECRET not in stream


XSS = "<img src=x onerror=\"window.__xss=1\">"


def test_script_in_names_notes_and_titles_is_shown_as_text(logged_in_app, browser):
    """A run saved with markup in its name and notes, over a corpus whose document title is
    markup, opened in Sessions and in Explore: the markup shows as text and never runs."""
    from playwright.sync_api import expect

    url, _, trace = logged_in_app
    client = client_of(url, "annotator")
    marked = json.loads(trace)
    unit = marked["stages"][0]["candidates"][0]["unit"]
    unit["title"], unit["text"] = XSS, f"text {XSS}"
    run_id = client.predict(json.dumps(marked), XSS, f"notes {XSS}", api_name="/save_run")
    page = logged_in_page(browser, url, "admin")
    expect(page.locator("#fe-who")).to_contain_text("Signed in as admin", timeout=30_000)
    page.get_by_role("tab", name="Sessions").click()
    table = page.locator("#fe-sessions-table")
    expect(table).to_contain_text("<img src=x", timeout=20_000)
    page.locator("#fe-session-ids textarea, #fe-session-ids input").fill(str(run_id))
    page.locator("#fe-open").click()
    expect(page.locator("#fe-session-message")).to_contain_text(f"Run {run_id}",
                                                                timeout=20_000)
    page.wait_for_timeout(1_000)
    assert page.evaluate("window.__xss") is None
    page.close()


SQL = ["x' OR '1'='1", "'; DROP TABLE runs; --", "1; DELETE FROM labels", "\" OR 1=1 --"]


def test_sql_in_every_filter_is_a_value_not_a_statement(logged_in_app):
    """Every endpoint that filters by a name the client types (a dataset, an assessor, a
    user, a version) given SQL: refused or empty, and the stored runs, labels, pools and
    the audit log intact (every DuckDB query takes its values as parameters)."""
    from gradio_client.exceptions import AppError

    url, _, trace = logged_in_app
    admin = client_of(url, "admin")
    if not json.loads(admin.predict(api_name="/list_runs")):
        admin.predict(trace, "kept", "", api_name="/save_run")
    before = {name: admin.predict(api_name=f"/{name}")
              for name in ("list_runs", "list_labels", "list_pools", "list_evaluations")}
    calls = [("list_pools", lambda s: (s,)), ("audit_log", lambda s: (50, s)),
             ("export_judgments", lambda s: (s,)),
             ("export_judgments", lambda s: ("x", "jsonl", s)),
             ("compare_assessors", lambda s: (1, s, "b")), ("next_unit", lambda s: (1, s)),
             ("activate_classifier", lambda s: (s,)), ("remove_corpus", lambda s: (s,)),
             ("evaluate", lambda s: (s, "echo")), ("list_corpora", lambda s: ()),
             ("attribution", lambda s: (1, s)), ("paired", lambda s: (1, s, s))]
    for text in SQL:
        for route, args in calls:
            try:
                answer = admin.predict(*args(text), api_name=f"/{route}")
            except AppError:
                continue
            assert answer in ("[]", "") or route in ("list_corpora",), (route, text, answer)
    after = {name: admin.predict(api_name=f"/{name}") for name in before}
    assert after == before
