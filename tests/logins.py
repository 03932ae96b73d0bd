"""Logging in, for the tests of logins (test_roles, test_attacks): one user per role in a
users file, the app served with logins in this process (fixtures in conftest.py), and a
client, an HTTP opener or a browser page logged in as one of them."""

from __future__ import annotations

from engine.store.users import ROLES

PASSWORDS = {role: f"{role}-password-1" for role in ROLES}


def client_of(url: str, name: str, password: str | None = None):
    """A gradio_client logged in as `name` (by default with its role's password)."""
    from tests.fakes import gradio_client

    return gradio_client(url + "/", auth=(name, password or PASSWORDS[name]))


def login(url: str, name: str, password: str):
    """(status, an opener holding the session's cookie in its `jar`)."""
    import http.cookiejar
    import urllib.parse

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.jar = jar
    form = urllib.parse.urlencode({"username": name, "password": password}).encode()
    try:
        with opener.open(url + "/login", form, timeout=30) as answer:
            return answer.status, opener
    except urllib.error.HTTPError as err:
        return err.code, opener


def logged_in_page(browser, url: str, role: str, password: str | None = None):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.fill("input[type=text]", role)
    page.fill("input[type=password]", password or PASSWORDS[role])
    page.keyboard.press("Enter")
    return page
