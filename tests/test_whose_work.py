"""Whose work (issue 54): with logins, saved runs, labels and the audit log carry the user
who made them, only a run's owner or an admin deletes it, and every two people who labelled
or judged something in common get their agreement."""

from __future__ import annotations

import pytest

from engine.service.door import Door, NotAllowed
from engine.service.explorer import Explorer
from engine.store.users import Users


def test_runs_and_labels_carry_their_user_and_two_peoples_agreement_shows(prepared,
                                                                          users_file,
                                                                          tiny_corpus):
    """A run saved by an annotator is theirs: another annotator may not delete it, an
    admin may. Two annotators' labels of the same pairs are both kept, with their kappa; a
    label under another's name is refused."""
    acting = ["annotator"]
    explorer = Explorer(*prepared, door=Door(Users(users_file), who=lambda: acting[0]))
    run_id = explorer.runs.save_run(explorer.runs.run("Who painted La Grande Jatte?", "echo"),
                                    "mine")
    assert [(r.id, r.owner) for r in explorer.runs.saved_runs()] == [(run_id, "annotator")]
    acting[0] = "annotator2"
    with pytest.raises(NotAllowed, match=rf"delete_run of run {run_id} needs the admin role "
                                         r"or its owner \(annotator\); you are annotator2"):
        explorer.runs.delete_run(run_id)
    docs = tiny_corpus.documents
    for who, values in (("annotator", (1, 0, 1)), ("annotator2", (1, 1, 1))):
        acting[0] = who
        for other, value in zip((1, 2, 3), values, strict=True):
            explorer.annotation.add_label("q", docs[0].id, docs[other].id, value)
    assert len(explorer.annotation.labels()) == 6
    ((first, second, agreed),) = explorer.annotation.label_agreement()
    assert {first, second} == {"annotator", "annotator2"}
    assert agreed.pairs == 3 and agreed.exact == pytest.approx(2 / 3)
    assert agreed.matrix == ((0, 1), (0, 2)) or agreed.matrix == ((0, 0), (1, 2))
    with pytest.raises(NotAllowed, match="Annotator 'bob' is not you"):
        explorer.annotation.add_label("q", docs[0].id, docs[1].id, 1, annotator="bob")
    acting[0] = "admin"
    explorer.runs.delete_run(run_id)
    assert explorer.runs.saved_runs() == []
    logged = {(e.username, e.action, e.allowed): e.detail
              for e in explorer.audit_log()}
    assert logged["admin", "delete_run", True] == f"run {run_id} of annotator"
    assert logged["annotator2", "delete_run", False] == f"run {run_id}"


def test_every_two_people_who_graded_something_in_common_get_their_kappa():
    from engine.judging.agreement import pairwise

    people = {"ann": {"q1": {"d1": 3, "d2": 0, "d3": 2}},
              "bo": {"q1": {"d1": 3, "d2": 1, "d3": 2}},
              "cy": {"q2": {"d9": 1}}}  # nothing in common with the others
    ((first, second, agreed),) = pairwise(people)
    assert (first, second, agreed.pairs) == ("ann", "bo", 3)
    assert agreed.exact == pytest.approx(2 / 3) and 0 < agreed.kappa < 1


