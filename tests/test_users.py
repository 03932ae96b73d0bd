"""Who may log in (issue 54): users in a users file with roles and argon2id hashes,
managed by `funnel-engine users`, the password read from standard input only."""

from __future__ import annotations

import io
import json
import stat

import pytest

from engine.errors import ConfigError
from engine.store.users import Users


def test_a_user_is_stored_with_a_slow_salted_hash_and_verified(tmp_path):
    people = Users(tmp_path / "users.json")
    ann = people.add("ann", "correct horse", "annotator")
    assert (ann.name, ann.role) == ("ann", "annotator")
    stored = (tmp_path / "users.json").read_text()
    assert "correct horse" not in stored and "$argon2id$" in stored
    assert stat.S_IMODE((tmp_path / "users.json").stat().st_mode) == 0o600
    people.add("bob", "correct horse", "viewer")  # same password, another salt
    hashes = [u["hash"] for u in json.loads((tmp_path / "users.json").read_text())[
        "users"].values()]
    assert hashes[0] != hashes[1]
    assert people.verify("ann", "correct horse") == ann
    assert people.verify("ann", "wrong horse") is None
    assert people.verify("nobody", "correct horse") is None
    assert ann.may("viewer") and ann.may("annotator") and not ann.may("admin")


@pytest.mark.parametrize("call, message", [
    (lambda u: u.add("<script>", "long enough"), "User name '<script>' is not usable"),
    (lambda u: u.add("eve", "short"), "A password has 8-1024 characters; this one has 5"),
    (lambda u: u.add("eve", "long enough", "root"), "role='root': use one of viewer, "),
    (lambda u: u.add("ann", "long enough"), "User 'ann' exists already"),
    (lambda u: u.set_role("zed", "admin"), "No user 'zed' in"),
    (lambda u: u.remove("zed"), "its users: ann"),
])
def test_bad_users_are_refused_by_name(tmp_path, call, message):
    people = Users(tmp_path / "users.json")
    people.add("ann", "correct horse")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(people)


def test_a_damaged_users_file_is_refused_and_left_as_it_is(tmp_path):
    path = tmp_path / "users.json"
    path.write_text('{"users": {"ann": {"role": "king", "hash": "x"}}}')
    with pytest.raises(ConfigError, match="users file .* is unreadable"):
        Users(path).verify("ann", "anything at all")
    assert "king" in path.read_text()


def test_users_are_managed_from_the_command_line_the_password_from_stdin(
        tmp_path, monkeypatch, capsys):
    from engine.cli.main import main

    path = tmp_path / "users.json"
    monkeypatch.setenv("FUNNEL_USERS", str(path))
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse\n"))
    assert main(["users", "add", "ann", "--role", "admin"]) == 0
    assert main(["users", "role", "ann", "annotator"]) == 0
    assert main(["users", "list"]) == 0
    said = capsys.readouterr().out
    assert "user ann added as admin" in said and "user ann is now annotator" in said
    assert "\nann\tannotator\t" in said and "correct horse" not in said
    assert Users(path).verify("ann", "correct horse") is not None
    stamp = Users(path).stamp("ann")
    monkeypatch.setattr("sys.stdin", io.StringIO("battery staple\n"))
    assert main(["users", "passwd", "ann"]) == 0
    assert "user ann has a new password; their sessions have ended" in \
        capsys.readouterr().out
    assert Users(path).verify("ann", "correct horse") is None
    assert Users(path).verify("ann", "battery staple") is not None
    assert Users(path).stamp("ann") not in (stamp, None)  # the old sessions have ended
    assert main(["users", "remove", "ann"]) == 0
    assert Users(path).list() == []
    monkeypatch.delenv("FUNNEL_USERS")
    assert main(["users", "list"]) == 2
    assert "Name the users file: --file FILE, or $FUNNEL_USERS" in capsys.readouterr().err
