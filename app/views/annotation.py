"""The Annotate tab's views: the pair being labelled, the judged pairs, the stored labels
and the classifier's versions, as HTML from engine records."""

from __future__ import annotations

import math

from app.views.trace import error_box, esc
from engine.progress import duration
from engine.service.annotation import AUC_DECIMALS, ClassifierStatus, JudgedPair
from engine.store.labels import Label

SET_ASIDE = ("*Labels on HotpotQA dev500 questions and on the training questions held out "
             "for the classifier's figures are stored but set aside when retraining, so the "
             "held-out figures stay comparable and evaluation stays clean: to teach the "
             "classifier, label pairs of other questions (typed ones, or the other "
             "datasets').*")


def trains_note(dataset: str, total: int, trains: set[str] | None) -> str:
    """Beside Annotate's picker: whether labels on the chosen dataset's questions train the
    classifier (`trains`: the ids of those whose labels do; None: unknown)."""
    if trains is None:
        return SET_ASIDE
    name = esc(dataset)
    if not trains:
        return (f"⚠ **Labels on {name} questions never train**: its questions are held out "
                "for evaluation, so Retrain sets their labels aside (they are kept). To "
                "teach the classifier, pick a training dataset (listed first) or type a "
                "question.")
    if len(trains) == total:
        return f"Labels on {name} questions train the classifier when you press Retrain."
    held = total - len(trains)
    return (f"Labels on {len(trains):,} of its {total:,} questions train the classifier; the "
            f"other {held:,} are held out for the classifier's own figures (marked "
            "\"held out\" in the list): their labels are kept but set aside when retraining.")


def _truth(value: int | None) -> str:
    return {1: "positive", 0: "negative"}.get(value, "")


def pair_card(question: str, pairs: list[dict], current: int) -> str:
    """The pair being labelled, both documents in full."""
    if not pairs:
        return ""
    if current >= len(pairs):
        return ("<div class='fe-kept'>Every pair of this question is labelled or skipped. "
                "Find pairs for another question, or retrain.</div>")
    p = JudgedPair(**pairs[current])
    facts = [f"P = {p.probability:.3f} (threshold {p.threshold:.3f}): "
             f"{'kept' if p.kept else 'dropped'}"]
    if p.gold is not None:
        facts.append(f"gold: {_truth(p.gold)}")
    if p.label is not None:
        facts.append(f"your label: {_truth(p.label)}")
    return (f"<div class='fe-card'><b>Pair {current + 1} of {len(pairs)}</b> · "
            f"{esc(' · '.join(facts))}<br><b>Question:</b> {esc(question)}"
            "<div style='display:flex; gap:16px'>"
            f"<div style='flex:1'><b>d1: {esc(p.d1_title)}</b><br>{esc(p.d1_text)}</div>"
            f"<div style='flex:1'><b>d2: {esc(p.d2_title)}</b><br>{esc(p.d2_text)}</div>"
            "</div><small>Do the two documents together answer the question? "
            "y = positive, n = negative, s = skip</small></div>")


def pairs_table(pairs: list[dict], current: int) -> str:
    rows = []
    for n, raw in enumerate(pairs):
        p = JudgedPair(**raw)
        style = " style='background:#eef'" if n == current else ""
        flag = " ⚠" if p.disagrees else ""
        rows.append(f"<tr{style}><td>{n + 1}{flag}</td><td>{esc(p.d1_title)}</td>"
                    f"<td>{esc(p.d2_title)}</td><td>{p.probability:.3f}</td>"
                    f"<td>{'kept' if p.kept else 'dropped'}</td><td>{_truth(p.gold)}</td>"
                    f"<td>{_truth(p.label)}</td></tr>")
    return ("<table class='fe-table' id='fe-pairs-table'><thead><tr><th>#</th><th>d1</th>"
            "<th>d2</th><th>P</th><th>classifier</th><th>gold</th><th>label</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table><small>⚠ the classifier disagrees with "
            "the gold or your label</small>")


def labels_table(labels: list[Label], limit: int = 50) -> str:
    """The newest `limit` stored labels."""
    rows = "".join(
        f"<tr><td>{x.id}</td><td>{esc(x.question)}</td><td>{esc(x.d1_title)}</td>"
        f"<td>{esc(x.d2_title)}</td><td>{_truth(x.label)}</td><td>{esc(x.source)}</td>"
        f"<td>{esc(x.annotator)}</td><td>{esc(x.created)}</td></tr>" for x in labels[:limit])
    more = f" (the newest {limit} shown)" if len(labels) > limit else ""
    return (f"<div class='fe-stage'><b>{len(labels)}</b> stored labels{more}</div>"
            "<table class='fe-table' id='fe-labels-table'><thead><tr><th>id</th>"
            "<th>question</th><th>d1</th><th>d2</th><th>label</th><th>source</th><th>by</th>"
            f"<th>when</th></tr></thead><tbody>{rows}</tbody></table>")


def agreement_table(found: list, what: str = "pairs both labelled") -> str:
    """Every two people's agreement (engine.judging.agreement.pairwise): how many items
    both gave a label or grade, the share given alike and Cohen's kappa; a note where no
    two people share an item yet."""
    if not found:
        return ("<div class='fe-stage'>Agreement between people shows once two of them "
                f"have {esc(what)} in common.</div>")

    def kappa(value) -> str:
        return "undefined (one value throughout)" if value is None else f"{value:.3f}"

    rows = "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td><td>{found.pairs}</td>"
                   f"<td>{found.exact:.0%}</td><td>{kappa(found.kappa)}</td></tr>"
                   for a, b, found in found)
    return ("<div class='fe-stage'>Agreement between people, on the "
            f"{esc(what)} (Cohen's kappa: 1 agrees throughout, 0 as chance would)</div>"
            "<table class='fe-table fe-agreement'><thead><tr><th>first</th><th>second</th>"
            f"<th>{esc(what)}</th><th>alike</th><th>kappa</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def plural(n: int, noun: str) -> str:
    """"1 label", "3 labels"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def trained_on(job: dict) -> str:
    """The labels a retrain trains on, and those it sets aside, as the versions table
    counts them: "3 labels (2 more set aside: on held-out or dev500 questions)"."""
    aside = job.get("set_aside", 0)
    return plural(job["labels"], "label") + (
        f" ({aside:,} more set aside: on held-out or dev500 questions)" if aside else "")


RULE = (f"A retrained version becomes active only if its held-out AUC (to {AUC_DECIMALS} "
        "decimals, on the same held-out pairs) is at least the active version's. "
        "Otherwise the active version stays, and the new one is kept: choose it under "
        "Versions and press Make active to use it anyway.")


def whole_wait(job: dict) -> str:
    """A waiting retrain's whole wait, up front: until its training starts (the
    first-start training's time left, or the builds ahead of it), then its own training
    (timed from the first-start training's pace here when it kept one)."""
    starts, takes = job.get("starts_in", 0.0), job.get("takes", 0.0)
    own = f"about {duration(takes)} of training"
    if not math.isfinite(starts):
        return (f"it starts when the builds before it end (how long they take is not known "
                f"yet), then takes {own}")
    if starts < 1:
        return f"{own}, starting now"
    return (f"about {duration(starts + takes)} in all: about {duration(starts)} until it "
            f"starts, then {own}")


def _no_version(status: ClassifierStatus) -> str:
    """Why there is no classifier version yet, and what makes one."""
    first = status.first_training
    said = esc(first.get("line", ""))
    if first.get("state") in ("waiting", "running"):
        return ("No classifier is trained yet; the first-start training is under way "
                f"({said}). Its version appears here when it ends; until then the untrained "
                "stand-in decides.")
    if first.get("state") == "failed":
        return (f"No classifier is trained yet: the first-start training failed ({said}); "
                "the untrained stand-in decides. Fix what it names and restart the app, or "
                "label pairs below and press Retrain.")
    return ("No classifier is trained yet: label pairs below and press Retrain, or restart "
            "the app, whose first start trains one in the background.")


def classifier_html(status: ClassifierStatus) -> str:
    """The retrain's state (what it waits for, its progress, or how it ended), the rule
    that decides which version is active, and every version's held-out figures."""
    job = status.retrain
    lines = [_retrain_html(job, status.active)]
    rows = []
    for v in reversed(status.versions):
        m = v["heldout"]
        mark = " <b>(active)</b>" if v["active"] else ""
        aside = f" ({v['labels_set_aside']} set aside)" if v.get("labels_set_aside") else ""
        rows.append(f"<tr><td>{esc(v['id'])}{mark}</td><td>{esc(v['created'])}</td>"
                    f"<td>{v['labels']}{aside}</td><td>{v['threshold']:.3f}</td>"
                    f"<td>{_auc(v)}</td><td>{m.get('accuracy', 0):.3f}</td>"
                    f"<td>{m.get('precision', 0):.3f}</td>"
                    f"<td>{m.get('recall', 0):.3f}</td><td>{m.get('pairs', 0)}</td></tr>")
    if not rows:
        lines.append(f"<div id='fe-no-version'>{_no_version(status)}</div>")
    lines.append(f"<small id='fe-retrain-rule'>{esc(RULE)} Labels on held-out or HotpotQA "
                 "dev500 questions are kept but set aside when retraining, so held-out "
                 "figures stay comparable and evaluation stays clean.</small>")
    return ("".join(lines) + "<table class='fe-table' id='fe-versions-table'><thead><tr>"
            "<th>version</th><th>trained</th><th>labels</th><th>threshold</th>"
            "<th>AUC</th><th>accuracy</th><th>precision</th><th>recall</th>"
            "<th>held-out pairs</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _retrain_html(job: dict, active: str | None) -> str:
    """What the retrain waits for, how far it has got, or how it ended; while it waits or
    runs, the version it will be compared with (the active one)."""
    before = (f" It will be compared with version {esc(active)}, active meanwhile."
              if active else " No version is trained yet: the untrained stand-in decides "
              "meanwhile.")
    if job["state"] == "waiting":
        return (f"<div class='fe-progress' id='fe-retrain-waiting'>Retrain on "
                f"{trained_on(job)}: <b>{whole_wait(job)}</b>. Waiting "
                f"({duration(job.get('waited', 0))} so far) for "
                f"{esc(job.get('waiting_for') or 'its turn')}. It starts by itself when that "
                "ends: one long build runs at a time here, the shortest first."
                f"{before}</div>")
    if job["state"] == "running":
        part, left = "", ""
        if job.get("phase"):
            part = f": {job['phase']}"
        elif job["total"]:
            part = f": {job['done']:,}/{job['total']:,} ({job['done'] / job['total']:.0%})"
            if job.get("left") is not None:  # told once it has kept a pace
                left = f", about {duration(job['left'])} left"
            elif job.get("takes", 0) > job["seconds"]:  # until then, what it was expected
                left = f", about {duration(job['takes'] - job['seconds'])} left as expected"
        return (f"<div class='fe-progress'>Retraining on {trained_on(job)}"
                f"{esc(part)}, {job['seconds']:.0f} s so far{left}.{before}</div>")
    if job["state"] == "failed":
        return error_box(f"The retrain failed: {job['error']}")
    if job["state"] == "interrupted":
        return error_box(f"The last retrain was interrupted: {job['error']}")
    if job["state"] == "done":
        return _retrain_done_html(job, active)
    return ""


def _retrain_done_html(job: dict, active: str | None) -> str:
    """How a retrain ended: which version is active and why, both versions' figures."""
    after, before = esc(job["after"]), esc(job["before"])
    compared = job.get("compared") or {}
    if job["after"] == job["before"]:
        return ("<div class='fe-kept' id='fe-retrain-done'>The retrain made no new version: "
                f"the active version {after} was trained on these very labels. Label more "
                "pairs, then retrain.</div>")
    waited = job.get("waited", 0)
    head = (f"Retrained in {duration(job['seconds'])} on {trained_on(job)}"
            + (f" (after waiting {duration(waited)} for its turn)" if waited >= 1 else ""))
    new, old = compared.get("after") or {}, compared.get("before") or {}
    if not job["before"]:
        text = (f"{head}: version {after} is now active (before: no trained version; the "
                "untrained stand-in decided).")
        box = "fe-kept"
    elif job.get("activated", True):
        text = (f"{head}: version {after} is now active, replacing version {before}"
                + (f": its held-out AUC {_figure(new)} is not below {_figure(old)}."
                   if old.get("heldout_auc") is not None else
                   " (which could not be measured on the held-out pairs)."))
        box = "fe-kept"
    else:
        since = (" You have made it active since." if active == job["after"] else
                 " It is selected under Versions: press Make active to use it anyway.")
        text = (f"{head}: version {after} is kept but <b>not made active</b>: its held-out "
                f"AUC {_figure(new)} is below version {before}'s {_figure(old)}, which stays "
                f"active.{since}")
        box = "fe-error"
    return (f"<div class='{box}' id='fe-retrain-done'>{text}</div>"
            + comparison_table(compared))


def comparison_table(compared: dict) -> str:
    """Before and after on the same held-out pairs (empty when nothing was compared)."""
    rows = []
    for role in ("before", "after"):
        entry = compared.get(role)
        if not entry:
            continue
        if entry.get("error"):
            rows.append(f"<tr><td>{role}</td><td>{esc(entry['id'])}</td><td colspan='5'>"
                        f"could not be measured: {esc(entry['error'])}</td></tr>")
            continue
        m = entry["heldout"]
        again = " (measured again on these pairs)" if entry.get("rescored") else ""
        rows.append(f"<tr><td>{role}</td><td>{esc(entry['id'])}{again}</td>"
                    f"<td>{_figure(entry)}</td><td>{entry['threshold']:.3f}</td>"
                    f"<td>{m.get('accuracy', 0):.3f}</td><td>{m.get('precision', 0):.3f}</td>"
                    f"<td>{m.get('recall', 0):.3f}</td></tr>")
    if not rows:
        return ""
    return (f"<table class='fe-table' id='fe-retrain-compared'><caption>Before and after, on "
            f"the same {compared.get('pairs', 0)} held-out pairs</caption><thead><tr><th></th>"
            "<th>version</th><th>AUC</th><th>threshold</th><th>accuracy</th>"
            f"<th>precision</th><th>recall</th></tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>")


def _figure(entry: dict) -> str:
    """A held-out AUC as the rule compares it."""
    auc = entry.get("heldout_auc")
    return "?" if auc is None else f"{auc:.{AUC_DECIMALS}f}"


def _auc(version: dict) -> str:
    auc = version.get("heldout_auc")
    return "" if auc is None else f"{auc:.3f}"
