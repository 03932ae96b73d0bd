"""Logins and roles (issue 54): the door's table, its check and its throttle on their own,
then the app served with logins in this process, called route by route as each role with
the real gradio_client and without a session with raw HTTP."""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import time
import urllib.error
import urllib.request

import pytest

from engine.service import door as door_module
from engine.service.annotation import Annotation
from engine.service.catalog import Catalog
from engine.service.diagnosis import Diagnoses
from engine.service.door import ACTIONS, BUILDER, EXTRA_ACTIONS, Door, NotAllowed
from engine.service.evaluations import Evaluations
from engine.service.explorer import Explorer
from engine.service.judging import Judging
from engine.service.nuggets import Nuggets
from engine.service.presets import Presets
from engine.service.runs import Runs
from engine.service.tuning import Tuning
from engine.store.users import ROLES, Users
from tests.logins import PASSWORDS, client_of, logged_in_page, login


def _door(users_file, name: str | None, **kwargs) -> Door:
    return Door(Users(users_file), who=lambda: name, **kwargs)


# --- the table and the check ----------------------------------------------------------------

def test_every_public_method_of_the_facades_is_an_action_of_the_table_and_checked():
    """The roles' table names every public method of Explorer and of the collaborators it
    exposes (Catalog, Runs, Evaluations, Diagnoses, Annotation, Judging, Nuggets, Presets,
    Tuning) and
    nothing else, and each is wrapped by the check (a method added without a role fails at
    import, one renamed leaves a stale entry here)."""
    methods = {name: member for cls in (Explorer, Catalog, Runs, Evaluations, Diagnoses,
                                        Annotation, Judging, Nuggets, Presets, Tuning)
               for name, member in vars(cls).items()
               if not name.startswith("_") and inspect.isfunction(member)}
    assert set(methods) | set(EXTRA_ACTIONS) == set(ACTIONS)
    assert all(getattr(m, "action", None) == name for name, m in methods.items())
    assert {ACTIONS[a] for a in ("remove_corpus", "evaluate", "retrain_classifier",
                                 "import_pipeline", "audit_log")} == {"admin"}
    assert {ACTIONS[a] for a in ("save_run", "add_label", "judge", "delete_run")} == {
        "annotator"}


def test_a_refusal_names_the_action_and_the_role_it_needs(users_file):
    audited = []
    viewer = _door(users_file, "viewer", audit=audited.append)
    with pytest.raises(NotAllowed, match=r"^remove_corpus needs the admin role; you are a "
                                         r"viewer\."):
        viewer.check("remove_corpus")
    assert viewer.check("coverage").name == "viewer"
    annotator = _door(users_file, "annotator", audit=audited.append)
    with pytest.raises(NotAllowed, match="evaluate needs the admin role; you are an "
                                         "annotator"):
        annotator.check("evaluate")
    assert annotator.check("save_run").role == "annotator"
    admin = _door(users_file, "admin", audit=audited.append)
    admin.check("remove_corpus", "corpus 'x'")
    assert [(a.user, a.action, a.allowed) for a in audited] == [
        ("viewer", "remove_corpus", False), ("annotator", "evaluate", False),
        ("admin", "remove_corpus", True)]  # refusals and admin actions, nothing else


def test_without_a_login_or_with_a_removed_user_every_action_is_refused(users_file,
                                                                         tmp_path):
    with pytest.raises(NotAllowed, match="coverage needs a login"):
        _door(users_file, None).check("coverage")
    copy = tmp_path / "users.json"
    copy.write_bytes(users_file.read_bytes())
    gone = Door(Users(copy), who=lambda: "viewer")
    assert gone.check("coverage") is not None
    Users(copy).remove("viewer")
    with pytest.raises(NotAllowed, match="needs a login"):
        gone.check("coverage")
    # the app's build reads as a viewer, and can do nothing else
    with gone.acting_as(BUILDER):
        assert gone.check("datasets") is BUILDER
        with pytest.raises(NotAllowed, match="save_run needs the annotator role"):
            gone.check("save_run")


def test_without_logins_everyone_may_do_everything_and_work_carries_the_typed_name():
    open_door = Door()
    assert open_door.check("remove_corpus") is None and open_door.may("evaluate")
    open_door.owns("bob", "delete_run", "run 3")  # anyone may delete anything
    assert open_door.signed("  ann  ", "Annotator") == "ann"


def test_work_is_signed_by_the_login_and_only_its_owner_or_an_admin_deletes_it(users_file):
    annotator = _door(users_file, "annotator")
    assert annotator.signed("", "Annotator") == "annotator"
    with pytest.raises(NotAllowed, match="Annotator 'bob' is not you: logged in as "
                                         "annotator"):
        annotator.signed("bob", "Annotator")
    annotator.owns("annotator", "delete_run", "run 1")
    with pytest.raises(NotAllowed, match=r"delete_run of run 2 needs the admin role or its "
                                         r"owner \(bob\); you are annotator"):
        annotator.owns("bob", "delete_run", "run 2")
    _door(users_file, "admin").owns("bob", "delete_run", "run 2")


def test_wrong_passwords_lock_a_name_out_until_the_window_passes(users_file, monkeypatch):
    from tests.fakes import Clock

    clock = Clock()
    door = Door(Users(users_file), clock=clock)
    assert door.login("viewer", PASSWORDS["viewer"]).role == "viewer"
    for _ in range(door_module.MAX_FAILURES):
        assert door.login("viewer", "wrong-password") is None
    for _ in range(1_000):  # refused without hashing: a thousand take no time
        with pytest.raises(NotAllowed, match="5 wrong passwords for viewer in a row: "
                                             "wait 30 s"):
            door.login("viewer", PASSWORDS["viewer"])
    assert door.login("admin", PASSWORDS["admin"]) is not None  # another name is not locked
    clock.advance(door_module.LOCKOUT_SECONDS + 1)
    assert door.login("viewer", PASSWORDS["viewer"]).name == "viewer"


def test_refusals_and_admin_actions_land_in_the_audit_table_and_its_file(users_file,
                                                                         tmp_path):
    from engine.store.audit import AuditLog
    from engine.store.sessions import SessionStore

    log = AuditLog(SessionStore(tmp_path / "s.duckdb"))
    viewer = _door(users_file, "viewer", audit=log.record)
    with pytest.raises(NotAllowed):
        viewer.check("remove_corpus", "corpus '<script>x</script>'")
    _door(users_file, "admin", audit=log.record).check("evaluate")
    entries = log.entries()
    assert [(e.username, e.action, e.allowed) for e in entries] == [
        ("admin", "evaluate", True), ("viewer", "remove_corpus", False)]
    lines = [json.loads(line) for line in log.file.read_text().splitlines()]
    assert [line["user"] for line in lines] == ["viewer", "admin"]
    assert lines[0]["detail"] == "corpus '<script>x</script>'"
    assert log.file.stat().st_mode & 0o077 == 0
    assert [e.action for e in log.entries(user="viewer")] == ["remove_corpus"]


# --- the app with logins, route by route ----------------------------------------------------

# every named endpoint: the action it asks the engine for and arguments that reach that
# check (a bad id or name is refused only after it, for the roles it lets through)
ROUTES: dict[str, tuple[str, tuple]] = {
    "run": ("run", ("Who painted La Grande Jatte?", "echo")),
    "save_run": ("save_run", ("TRACE",)),
    "reanswer": ("reanswer", ("TRACE", "[]")),
    "ablation": ("ablation", (0, 0, -1, "", "TRACE")),
    "ablation_agreement": ("ablation_agreement", (999,)),
    "ceilings": ("ceilings", (999,)),
    "ceiling_table": ("ceiling_table", (999,)),
    "coverage": ("coverage", (999,)),
    "list_runs": ("saved_runs", ()),
    "load_run": ("load_run", (999,)),
    "status": ("ready", ()),
    "annotate_pairs": ("judged_pairs", ("TRACE",)),
    "annotate_label": ("add_label", ("q", "Danube", "Vienna", 1)),
    "list_labels": ("labels", ()),
    "retrain": ("retrain_classifier", ()),
    "classifier_status": ("classifier_status", ()),
    "activate_classifier": ("activate_classifier", ("no-such-version",)),
    "add_corpus": ("add_corpus", ("FILE", "bad name!")),
    "list_corpora": ("corpora", ()),
    "remove_corpus": ("remove_corpus", ("no-such-corpus",)),
    "evaluate": ("evaluate", ("no-such-dataset", "echo")),
    "evaluation_status": ("evaluation_status", (999,)),
    "list_evaluations": ("list_evaluations", ()),
    "load_evaluation": ("evaluation", (999,)),
    "export_evaluation": ("export_evaluation", (999,)),
    "export_evaluation_files": ("export_evaluation_files", (999,)),
    "import_traces": ("import_pipeline", ("FILE",)),
    "attribution": ("attribution", (999,)),
    "paired": ("paired", (999,)),
    "regressions": ("regressions", (999,)),
    "sweep": ("sweep", ("echo", '{"k": [1, 2]}', "no-such-dataset")),
    "resume_evaluation": ("resume_evaluation", (999,)),
    "remove_evaluation": ("remove_evaluation", (999,)),
    "add_question_set": ("add_questions", ("no-such-corpus", "set", "A question?")),
    "add_question_file": ("add_questions", ("no-such-corpus", "set", "FILE")),
    "generate_question_set": ("generate_questions", ("no-such-corpus", "set")),
    "pool_evaluation": ("pool_evaluation", (999,)),
    "list_pools": ("pools", ()),
    "next_unit": ("to_judge", (999, "")),
    "record_judgment": ("judge", (999, "q", "d", 1, "")),
    "undo_judgment": ("undo", (999, "")),
    "llm_judge": ("llm_judge", (999,)),
    "export_judgments": ("export_judgments", ("no-such-set",)),
    "import_judgments": ("import_judgments", ("no-such-set", "FILE")),
    "compare_assessors": ("compared", (999, "a", "b")),
    "list_nuggets": ("nuggets", ("no-such-set",)),
    "add_nugget": ("add_nugget", ("no-such-set", "q", "a fact", "vital", "")),
    "edit_nugget": ("edit_nugget", (999, "")),
    "merge_nuggets": ("merge_nuggets", ("998, 999", "a fact", "vital", "")),
    "remove_nugget": ("remove_nugget", (999, "")),
    "add_gold_nuggets": ("add_gold_nuggets", ("no-such-set",)),
    "export_nuggets": ("export_nuggets", ("no-such-set",)),
    "import_nuggets": ("import_nuggets", ("no-such-set", "FILE", "")),
    "next_answer": ("to_assign", (999, "")),
    "assign_nugget": ("assign", (999, "q", "flat", 1, "support", "")),
    "undo_assignment": ("undo_assignment", (999, "")),
    "nugget_scores": ("nugget_scores", (999,)),
    "export_assignments": ("export_assignments", (999,)),
    "label_agreement": ("label_agreement", ()),
    "audit_log": ("audit_log", ()),
    "list_presets": ("list_presets", ()),
    "save_preset": ("save_preset", ("bad name!", "echo")),
    "tune": ("tune", ("no-such-dataset", "echo")),
    "tune_status": ("tune_status", (999,)),
    "list_tunes": ("tunes", ()),
    "cancel_tune": ("cancel_tune", (999,)),
    "resume_tune": ("resume_tune", (999,)),
}
HEAVY_WHEN_ALLOWED = {"retrain"}  # allowed, it trains a classifier: its refusals are tested


@pytest.mark.live
def test_every_control_a_role_may_lack_is_on_the_page(logged_in_app):
    """The page greys out controls by their elem_id (app.login.CONTROLS): each is there,
    and its action is in the roles' table."""
    from app.login import CONTROLS, NAME_BOXES

    _, demo, _ = logged_in_app
    ids = {getattr(block, "elem_id", None) for block in demo.blocks.values()}
    assert [e for e in [*CONTROLS, *NAME_BOXES] if e not in ids] == []
    assert set(CONTROLS.values()) <= set(ACTIONS)


@pytest.mark.live
def test_every_route_answers_each_role_by_the_table(logged_in_app, tmp_path):
    """Each named endpoint, called as each role: refused, naming its action and the role
    it needs, exactly where the table says that role may not."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    from tests.test_api import ENDPOINTS

    assert set(ROUTES) == ENDPOINTS
    url, _, trace = logged_in_app
    upload = tmp_path / "upload.jsonl"
    upload.write_text('{"id": "x", "title": "x", "text": "x"}\n')
    wrong = []
    for role in ROLES:
        client = client_of(url, role)
        for route, (action, args) in ROUTES.items():
            allowed = ROLES.index(role) >= ROLES.index(ACTIONS[action])
            if allowed and route in HEAVY_WHEN_ALLOWED:
                continue
            given = [trace if a == "TRACE" else handle_file(str(upload)) if a == "FILE"
                     else a for a in args]
            try:
                client.predict(*given, api_name=f"/{route}")
                said = ""
            except AppError as err:
                said = str(err)
            refused = re.search(r"needs the (\w+) role", said)
            expected = f"{action} needs the {ACTIONS[action]} role; you are "
            if allowed != (refused is None) or (refused and expected not in said):
                wrong.append(f"{role} {route}: {said[:120] or 'allowed'}")
    assert wrong == []


@pytest.mark.live
def test_no_route_answers_without_a_session_or_with_a_forged_one(logged_in_app):
    """Every route the app serves, asked by raw HTTP without a session cookie (and with a
    forged one): 401, but the login page and its assets."""
    from app.login import OPEN_PATHS, OPEN_PREFIXES

    url, demo, _ = logged_in_app
    paths = set()
    for route in _paths(demo.server_app.routes):
        path = re.sub(r"\{[^}]*path[^}]*\}", "etc/passwd", route)
        paths.add(re.sub(r"\{[^}]+\}", "1", path))
    assert len(paths) > 40
    opened = []
    for path in sorted(paths):
        for cookie in ("", "access-token-unsecure-x=forged; access-token-x=forged"):
            for method in ("GET", "POST"):
                status = _status(url + path, method, cookie)
                if status != 401 and status not in (404, 405) and not (
                        path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)):
                    opened.append(f"{method} {path} -> {status}")
    assert opened == []


def _paths(routes) -> list[str]:
    """The path of every route, those of included routers (Gradio's /gradio_api/...) too."""
    found = []
    for route in routes:
        if getattr(route, "path", None):
            found.append(route.path)
        if getattr(route, "original_router", None) is not None:
            found += _paths(route.original_router.routes)
    return found


def _status(url: str, method: str, cookie: str = "") -> int:
    request = urllib.request.Request(url, data=b"{}" if method == "POST" else None,
                                     method=method, headers={"Cookie": cookie} if cookie
                                     else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


@contextlib.contextmanager
def _gated(users_file, ip_window: float):
    """(url, door, clock) of a one-button app behind the door and the gate, both timed by
    `clock` (tests.fakes.Clock), its sessions ending after two seconds, an address
    throttled for `ip_window` seconds."""
    import gradio as gr

    from app.login import request_user
    from app.ui import serve
    from tests.fakes import Clock, free_port

    clock = Clock()
    door = Door(Users(users_file), who=request_user, clock=clock)
    with gr.Blocks() as demo:
        out = gr.Textbox()
        gr.Button("who").click(lambda: door.check("coverage").name, None, out,
                               api_name="whoami")
    port = free_port()
    serve(demo, door, {"session_hours": 2 / 3600, "ip_window": ip_window,
                       "upload_mb_per_day": 1 / 1024, "clock": clock}, server_name="127.0.0.1",
          server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}", door, clock
    finally:
        demo.close()


@pytest.fixture
def gated(users_file):
    """The gated app, an address throttled for three seconds of its clock."""
    with _gated(users_file, ip_window=3.0) as served:
        yield served


def _get(opener, url: str) -> int:
    try:
        with opener.open(url, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.live
def test_a_session_ends_at_logout_and_after_its_hours(gated):
    url, _, clock = gated
    status, opener = login(url, "viewer", PASSWORDS["viewer"])
    assert status == 200 and _get(opener, url + "/config") == 200
    cookies = list(opener.jar)
    _get(opener, url + "/logout")
    assert _get(opener, url + "/config") == 401
    replayed = "; ".join(f"{c.name}={c.value}" for c in cookies)
    assert replayed and _status(url + "/config", "GET", replayed) == 401  # a cookie replayed
    status, opener = login(url, "viewer", PASSWORDS["viewer"])
    assert _get(opener, url + "/config") == 200
    clock.advance(1.5)
    assert _get(opener, url + "/config") == 200  # within its two seconds
    clock.advance(1.0)
    assert _get(opener, url + "/config") == 401  # expired


@pytest.mark.live
def test_a_thousand_wrong_passwords_are_throttled_and_the_right_one_works_after(
        gated, monkeypatch):
    from app.login import IP_FAILURES

    monkeypatch.setattr(door_module, "LOCKOUT_SECONDS", 1.0)
    url, _, clock = gated
    statuses = []
    for n in range(1_000):  # 10 ms apart on the app's clock: 10 s, 4 of the address's windows
        statuses.append(login(url, "annotator", f"wrong-{n}")[0])
        clock.advance(0.01)
    # five hashed, then the name locked out; a wrong one after each lockout, until the
    # address has had its IP_FAILURES wrong logins in a window: every other one answered
    # 429, unhashed
    assert statuses[:6] == [400] * 5 + [429]
    assert 5 < statuses.count(400) <= IP_FAILURES * 4  # the name's lockout ended between
    assert statuses.count(400) + statuses.count(429) == 1_000
    clock.advance(3.2)
    status, opener = login(url, "annotator", PASSWORDS["annotator"])
    assert status == 200 and _get(opener, url + "/config") == 200


@pytest.mark.live
def test_wrong_logins_from_one_address_are_throttled_whatever_the_name(gated):
    from app.login import IP_FAILURES

    url, _, _ = gated
    statuses = [login(url, f"nobody{n}", "wrong-password")[0]
                for n in range(IP_FAILURES + 2)]
    assert statuses[:IP_FAILURES] == [400] * IP_FAILURES and statuses[-2:] == [429, 429]
    assert login(url, "admin", PASSWORDS["admin"])[0] == 429  # until the window passes


@pytest.mark.live
def test_the_browser_logs_in_and_shows_each_role_what_it_may_do(logged_in_app, browser):
    """The login form, then the page as a viewer and as an annotator: who is signed in,
    the controls their role may not use greyed, the name boxes filled with the login; a
    wrong password keeps the login form up."""
    from playwright.sync_api import expect

    from tests.conftest import ARTIFACTS

    url, _, _ = logged_in_app
    page = logged_in_page(browser, url, "viewer", "not-the-password")
    expect(page.get_by_text("Incorrect", exact=False)).to_be_visible(timeout=20_000)
    page.close()
    page = logged_in_page(browser, url, "viewer")
    who = page.locator("#fe-who")
    expect(who).to_contain_text("Signed in as viewer (viewer)", timeout=30_000)
    expect(who).to_contain_text("need annotator")
    expect(page.locator("#fe-save")).to_be_disabled()
    expect(page.locator("#fe-run")).to_be_enabled()
    page.get_by_role("tab", name="Corpora").click()
    expect(page.locator("#fe-corpus-remove")).to_be_disabled()
    page.screenshot(path=str(ARTIFACTS / "roles-viewer.png"), full_page=True)
    page.close()
    page = logged_in_page(browser, url, "annotator")
    expect(page.locator("#fe-who")).to_contain_text("Signed in as annotator (annotator)",
                                                    timeout=30_000)
    expect(page.locator("#fe-save")).to_be_enabled()
    page.get_by_role("tab", name="Annotate").click()
    expect(page.locator("#fe-annotator textarea, #fe-annotator input")).to_have_value(
        "annotator")
    expect(page.locator("#fe-retrain")).to_be_disabled()
    page.get_by_role("tab", name="Evaluate").click()
    expect(page.locator("#fe-eval-start")).to_be_disabled()
    page.screenshot(path=str(ARTIFACTS / "roles-annotator.png"), full_page=True)
    page.close()


# --- fair share -----------------------------------------------------------------------------

def test_a_users_runs_at_once_and_long_jobs_going_are_limited_naming_the_setting(users_file):
    from engine.service.door import guarded
    from engine.service.limits import Limits

    going: set[int] = set()

    @guarded
    class Facade:
        def __init__(self, door):
            self.door = door

        def stream(self):
            yield 1
            yield 2

        def evaluate(self, evaluation_id: int) -> int:
            going.add(evaluation_id)
            return evaluation_id

    limits = Limits(runs=1, jobs=2, alive=lambda action, result: result in going)
    admin = Facade(_door(users_file, "admin", limits=limits))
    first = admin.stream()
    next(first)
    idle = admin.stream()  # a stream not started holds no share
    with pytest.raises(NotAllowed, match=r"admin has 1 runs going at once, the limit "
                                         r"\(--max-runs-per-user, FUNNEL_MAX_RUNS_PER_USER "
                                         r"= 1\): wait"):
        next(admin.stream())
    del idle
    assert list(Facade(_door(users_file, "viewer", limits=limits)).stream()) == [1, 2]
    list(first)  # the stream ended: its slot is free
    assert list(admin.stream()) == [1, 2]
    admin.evaluate(1), admin.evaluate(2)
    with pytest.raises(NotAllowed, match=r"admin has 2 long jobs going \(evaluate 1, "
                                         r"evaluate 2\), the limit \(--max-jobs-per-user"):
        admin.evaluate(3)
    going.discard(1)  # evaluation 1 ended
    assert admin.evaluate(3) == 3


@pytest.mark.live
def test_what_a_user_uploads_in_a_day_is_limited_naming_the_setting(gated):
    url, _, _ = gated
    status, opener = login(url, "annotator", PASSWORDS["annotator"])

    def upload(size: int) -> tuple[int, str]:
        boundary = "fe-boundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
                f"filename=\"c.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                ).encode() + b"x" * size + f"\r\n--{boundary}--\r\n".encode()
        request = urllib.request.Request(
            url + "/gradio_api/upload", body, method="POST",
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with opener.open(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    assert upload(300)[0] == 200
    status, said = upload(900)  # 1 KB a day in this app: 300 + 900 bytes pass it
    assert status == 413 and "annotator has sent 0.0 MB today" in said
    assert "--max-upload-mb-per-day, FUNNEL_MAX_UPLOAD_MB_PER_DAY" in said
    assert upload(300)[0] == 200


@pytest.mark.live
def test_judgments_carry_the_login_and_two_peoples_agreement_is_read(logged_in_app):
    """A pool judged over the API by two annotators, each logged in: each judgment is its
    login's (another name refused), and the two people's agreement is read."""
    from gradio_client.exceptions import AppError

    from engine.data.ingest import store
    from engine.documents import Document
    from tests.conftest import TINY_DOCS

    url, _, _ = logged_in_app
    admin = client_of(url, "admin")
    store("judged", [Document(t, t, x) for t, x in TINY_DOCS], "judged.jsonl")
    admin.predict("judged", "asked", "Who painted La Grande Jatte?", api_name="/add_question_set")
    evaluation_id = admin.predict("judged (asked)", "echo", api_name="/evaluate")
    for _ in range(120):
        if json.loads(admin.predict(evaluation_id, api_name="/evaluation_status"))[
                "state"] != "running":
            break
        time.sleep(0.5)
    pool = json.loads(admin.predict(evaluation_id, 2, api_name="/pool_evaluation"))["pool"]
    for name, grade in (("annotator", 3), ("annotator2", 1)):
        client = client_of(url, name, PASSWORDS["annotator"])
        unit = json.loads(client.predict(pool, "", api_name="/next_unit"))["unit"]
        with pytest.raises(AppError, match=f"Assessor 'bob' is not you: logged in as {name}"):
            client.predict(pool, unit["question_id"], unit["document_id"], grade, "bob",
                           api_name="/record_judgment")
        client.predict(pool, unit["question_id"], unit["document_id"], grade, "",
                       api_name="/record_judgment")
    judged = [json.loads(line) for line in admin.predict(
        "judged (asked)", "jsonl", api_name="/export_judgments").splitlines()]
    assert sorted(j["assessor"] for j in judged) == ["annotator", "annotator2"]
    compared = json.loads(admin.predict(evaluation_id, "annotator", "annotator2",
                                        api_name="/compare_assessors"))
    assert compared["pairs"] == 1 and compared["matrix"][3][1] == 1


@pytest.mark.parametrize("argv,says", [
    (["--host", "0.0.0.0"], "--host 0.0.0.0 lets other machines reach the app, and nobody "
                            "logs in: give --users FILE"),
    (["--share"], "--share lets other machines reach the app"),
    (["--users", "{empty}"], "no users in it yet; add one with `funnel-engine users --file"),
    (["--users", "{users}", "--auth", "ann:secret-password"], "--users and --auth both"),
    (["--auth", "ann"], "--auth 'ann' must look like USER:PASSWORD"),
    (["--otlp-receive", "4318"], "--otlp-receive 4318 needs a key: --otlp-key USER:KEY"),
    (["--otlp-receive", "4318", "--otlp-key", "ann:short"], "the key at least 16 characters"),
    (["--users", "{users}", "--otlp-receive", "4318", "--otlp-key",
      "viewer:0123456789abcdef0"], "viewer is a viewer, who may not save runs"),
    (["--users", "{users}", "--max-runs-per-user", "0"], "--max-runs-per-user 0 must be a "
                                                         "positive number"),
])
def test_the_app_refuses_to_start_open_to_others_or_with_a_bad_login_setting(
        argv, says, users_file, tmp_path, monkeypatch, capsys):
    """Refused before anything starts, naming the flag and the fix."""
    import sys

    from app import main as app_main

    empty = tmp_path / "none.json"
    given = [a.format(users=users_file, empty=empty) for a in argv]
    monkeypatch.setattr(sys, "argv", ["app.py", *given])
    monkeypatch.setattr(app_main, "Preparation", None)  # it must not get that far
    with pytest.raises(SystemExit):
        app_main.main()
    assert says in capsys.readouterr().err


def test_the_deprecated_auth_is_one_admin_and_local_serving_needs_no_setting(monkeypatch):
    import argparse

    from app import main as app_main

    parser = argparse.ArgumentParser()
    args = argparse.Namespace(session_hours=12.0, max_runs_per_user=2, max_jobs_per_user=2,
                              max_upload_mb_per_day=10.0, users=None, auth="ann:old",
                              host="127.0.0.1", share=False, no_auth=False)
    door = app_main._door(parser, args)
    assert [(u.name, u.role) for u in door.users.list()] == [("ann", "admin")]
    assert door.users.verify("ann", "old") is not None  # a short old password still works
    args.auth = ""
    assert not app_main._door(parser, args).logins  # this machine only: no set-up
    args.host, args.no_auth = "0.0.0.0", True
    assert not app_main._door(parser, args).logins  # open on purpose


def test_wrong_passwords_sent_at_once_count_before_their_hash(users_file, monkeypatch):
    """Twenty wrong logins sent in parallel: at most MAX_FAILURES reach the hash (each
    attempt is counted before it is checked), the rest are refused at once."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    door = _door(users_file, None)
    hashed, real = [], door.users.verify
    gate = threading.Barrier(door_module.MAX_FAILURES)

    def slow(name, password):
        hashed.append(name)
        try:
            gate.wait(timeout=2)  # every attempt let through is in flight at once
        except threading.BrokenBarrierError:
            pass
        return real(name, password)

    monkeypatch.setattr(door.users, "verify", slow)

    def attempt(n: int) -> str:
        try:
            return "wrong" if door.login("annotator", f"wrong-{n}") is None else "in"
        except NotAllowed:
            return "locked"

    with ThreadPoolExecutor(20) as pool:
        said = list(pool.map(attempt, range(20)))
    assert len(hashed) == door_module.MAX_FAILURES
    assert said.count("wrong") == door_module.MAX_FAILURES and said.count("locked") == 15


@pytest.mark.live
def test_a_session_ends_for_good_when_its_user_is_removed_or_changed(tmp_path):
    """Issue 67: a user removed and added again under the same name revived the old
    session cookie with the new role (admin). Removal, a role change and a password change
    each end a user's sessions; the name added again starts from a login."""
    path = tmp_path / "users.json"
    people = Users(path)
    people.add("ann", "ann-password-1", "viewer")
    with _gated(path, ip_window=60.0) as (url, _, _):
        status, old = login(url, "ann", "ann-password-1")
        assert status == 200 and _get(old, url + "/config") == 200
        people.remove("ann")
        people.add("ann", "ann-password-2", "admin")  # the same name, a new person
        assert _get(old, url + "/config") == 401
        status, fresh = login(url, "ann", "ann-password-2")
        assert status == 200 and _get(fresh, url + "/config") == 200
        people.set_role("ann", "annotator")
        assert _get(fresh, url + "/config") == 401
        status, fresh = login(url, "ann", "ann-password-2")
        assert status == 200 and _get(fresh, url + "/config") == 200
        people.set_password("ann", "ann-password-3")
        assert _get(fresh, url + "/config") == 401
        status, again = login(url, "ann", "ann-password-3")
        assert status == 200 and _get(again, url + "/config") == 200


def _login_from(url: str, name: str, forwarded: str) -> int:
    import urllib.parse

    form = urllib.parse.urlencode({"username": name, "password": "wrong-password"}).encode()
    request = urllib.request.Request(url + "/login", form, {"X-Forwarded-For": forwarded})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.live
def test_the_login_page_names_no_endpoint_and_x_forwarded_for_is_not_trusted(
        users_file, monkeypatch):
    """Issue 67: the page served before a login carried every endpoint's signature
    (window.gradio_api_info); X-Forwarded-For from this machine was trusted, so each wrong
    login could claim another address. Now the page names none, a forged header changes
    nothing (the throttle and the audit see the address that connected), and a failed
    login's audit entry names that address."""
    from app.login import IP_FAILURES
    from app.main import _trust_proxies

    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "")  # restored after the test
    _trust_proxies([])  # no --trusted-proxy: none
    with _gated(users_file, ip_window=60.0) as (url, door, _):
        audited = []
        door.audit = audited.append
        with urllib.request.urlopen(url + "/", timeout=30) as answer:
            page = answer.read().decode()
        assert 'window.gradio_api_info = {"named_endpoints": {}' in page
        assert "whoami" not in page
        statuses = [_login_from(url, f"nobody{n}", f"10.9.{n}.1")
                    for n in range(IP_FAILURES + 1)]
        assert statuses[:IP_FAILURES] == [400] * IP_FAILURES and statuses[-1] == 429
        failed = [e for e in audited if e.action == "login" and not e.allowed]
        assert len(failed) == IP_FAILURES
        assert all(e.detail == "wrong name or password (from 127.0.0.1)" for e in failed)
        status, _ = login(url, "viewer", PASSWORDS["viewer"])
        assert status == 429  # the one address it really is, throttled
