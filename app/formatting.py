"""HTML pieces of the UI: stage tables, the gold-lost banner, the answer and status boxes.

Plain functions of a RunTrace (no Gradio). Every corpus or user string is HTML-escaped
before anything is added around it, so a document holding `<script>` shows as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from engine.trace import GoldFlags, RunTrace, StageResult, gold_lost_at
from engine.types import Candidate

SNIPPET_CHARS = 320
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]{2,}")
_STOP = frozenset("the and for was who what which when where how are did does with from "
                  "that this his her its their one two also into than then".split())


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def highlight(text: str, query: str, answers: Sequence[str] = ()) -> str:
    """`text` escaped, with gold answers in <mark class=gold> and query words in <mark>."""
    out = esc(text)
    for answer in sorted({a for a in answers if a.strip()}, key=len, reverse=True):
        out = re.sub(rf"(?i)(?<![\w>]){re.escape(esc(answer))}(?!\w)",
                     lambda m: f'<mark class="gold">{m.group(0)}</mark>', out)
    words = {w.lower() for w in _WORD_RE.findall(query)} - _STOP
    if words:
        pattern = "|".join(re.escape(esc(w)) for w in sorted(words, key=len, reverse=True))
        # only outside tags: a word inside <mark class="gold"> markup must not be touched
        out = re.sub(rf"(?i)(<[^>]*>)|\b({pattern})\b",
                     lambda m: m.group(1) or f"<mark>{m.group(2)}</mark>", out)
    return out


def snippet(text: str, width: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + " …"


def _flag(flags: GoldFlags | None, i: int) -> str:
    if flags is None:
        return ""
    marks = []
    if i < len(flags.answer) and flags.answer[i]:
        marks.append('<span class="fe-badge fe-answer" title="holds a gold answer">answer</span>')
    if i < len(flags.support) and flags.support[i]:
        marks.append('<span class="fe-badge fe-support" title="a gold supporting document">'
                     'support</span>')
    return " ".join(marks)


def stage_table(trace: RunTrace, index: int) -> str:
    """One stage's candidates as an HTML table; clusters and documents expand to what the
    later stages kept of them."""
    stage = trace.stages[index]
    flags = trace.gold_flags[index] if index < len(trace.gold_flags) else None
    answers = trace.gold.answers if trace.gold else ()
    later = trace.stages[index + 1:]
    rows = []
    for i, cand in enumerate(stage.candidates):
        body = highlight(snippet(cand.unit.text), trace.question, answers) \
            if cand.unit.text else esc(", ".join(cand.unit.doc_ids))
        children = _children(cand, stage, later)
        if children:
            body = f"<details><summary>{body}</summary>{children}</details>"
        rows.append(f"<tr><td>{cand.rank}</td><td>{cand.score:.4f}</td>"
                    f"<td>{esc(cand.unit.title)}</td><td>{body}</td>"
                    f"<td>{_flag(flags, i)}</td></tr>")
    head = (f"<div class='fe-stage'><b>{esc(stage.name)}</b> ({esc(stage.granularity)}): "
            f"{stage.n_in:,} in, {len(stage.candidates)} kept, {stage.seconds:.2f} s</div>")
    return (f"{head}<table class='fe-table'><thead><tr><th>rank</th><th>score</th>"
            f"<th>title</th><th>text</th><th>gold</th></tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>")


def _children(cand: Candidate, stage: StageResult, later: Sequence[StageResult]) -> str:
    """The members of a cluster (kept ones marked) or the passages a document became."""
    if stage.granularity == "clusters":
        kept = {c.unit.id for s in later for c in s.candidates if cand.unit.id in c.parents}
        kept |= {p for s in later for c in s.candidates if cand.unit.id in c.parents
                 for p in c.parents}
        items = [f"<li>{'<b>' if d in kept else ''}{esc(d)}{'</b> (kept)' if d in kept else ''}"
                 "</li>" for d in cand.unit.doc_ids]
        return f"<ul class='fe-children'>{''.join(items)}</ul>"
    if stage.granularity == "documents":
        passages = [c for s in later for c in s.candidates if cand.unit.id in c.parents]
        if passages:
            items = [f"<li>{esc(c.unit.id)} (rank {c.rank}): {esc(snippet(c.unit.text, 160))}"
                     "</li>" for c in passages]
            return f"<ul class='fe-children'>{''.join(items)}</ul>"
    return ""


def gold_banner(trace: RunTrace) -> str:
    """Where the gold answer was lost, or that it survived (empty without gold)."""
    if trace.gold is None:
        return ""
    lost = gold_lost_at(trace)
    if lost:
        return (f"<div class='fe-lost'>Gold answer lost at stage <b>{esc(lost)}</b>: an "
                "earlier stage held it, this one dropped it.</div>")
    final = trace.gold_flags[-1] if trace.gold_flags else None
    if final is not None and any(final.answer):
        return "<div class='fe-kept'>The gold answer survived every stage.</div>"
    return "<div class='fe-lost'>No stage retrieved the gold answer.</div>"


def answer_box(trace: RunTrace) -> str:
    parts = [f"<div class='fe-answer-box'><b>Answer:</b> {esc(trace.answer or '(none)')}"]
    if trace.gold is not None:
        parts.append(f"<br><b>Gold:</b> {esc(' | '.join(trace.gold.answers))}")
        m = trace.metrics
        if "EM" in m:
            parts.append(f"<br>EM {m['EM']:.0f} · F1 {m['F1']:.2f}")
    parts.append(f"<br><small>{trace.reader_input_tokens:,} tokens sent to the reader; "
                 f"{sum(s.seconds for s in trace.stages) + trace.reader_seconds:.2f} s in "
                 "all</small></div>")
    return "".join(parts)


def error_box(message: str) -> str:
    return f"<div class='fe-error'>{esc(message)}</div>"


def compare_table(traces: Sequence[RunTrace]) -> str:
    """Paradigms side by side: reader budget, seconds, AR and gold-document recall."""
    keys = sorted({k for t in traces for k in t.metrics if k.startswith(("AR@", "gold_doc"))})
    rows = [("reader tokens", [f"{t.reader_input_tokens:,}" for t in traces]),
            ("seconds", [f"{sum(s.seconds for s in t.stages) + t.reader_seconds:.2f}"
                         for t in traces]),
            ("answer", [esc(t.answer) for t in traces])]
    rows += [(k, [f"{t.metrics[k]:.2f}" if k in t.metrics else "" for t in traces])
             for k in keys]
    rows += [("EM / F1", [f"{t.metrics['EM']:.0f} / {t.metrics['F1']:.2f}"
                          if "EM" in t.metrics else "" for t in traces])]
    head = "".join(f"<th>{esc(t.paradigm)}</th>" for t in traces)
    body = "".join(f"<tr><td>{esc(name)}</td>{''.join(f'<td>{v}</td>' for v in values)}</tr>"
                   for name, values in rows)
    return f"<table class='fe-table'><thead><tr><th></th>{head}</tr></thead>{body}</table>"


def final_passages(trace: RunTrace) -> str:
    answers = trace.gold.answers if trace.gold else ()
    items = [f"<li><b>{esc(c.unit.title)}</b>: "
             f"{highlight(snippet(c.unit.text), trace.question, answers)}</li>"
             for c in (trace.stages[-1].candidates if trace.stages else ())]
    return f"<ol class='fe-final'>{''.join(items)}</ol>"


CSS = """
.fe-table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
.fe-table th, .fe-table td { border-bottom: 1px solid #ddd; padding: 4px 6px;
  vertical-align: top; text-align: left; }
.fe-stage { margin: 10px 0 4px; }
mark { background: #fff3b0; padding: 0 1px; }
mark.gold { background: #f6c343; font-weight: bold; }
.fe-badge { border-radius: 4px; padding: 0 4px; font-size: 0.8em; color: white; }
.fe-answer { background: #b8860b; } .fe-support { background: #4c78a8; }
.fe-lost { background: #fde2e1; border-left: 4px solid #d9534f; padding: 6px 10px; }
.fe-kept { background: #e3f4e1; border-left: 4px solid #5cb85c; padding: 6px 10px; }
.fe-error { background: #fff4e5; border-left: 4px solid #f0ad4e; padding: 6px 10px; }
.fe-answer-box { font-size: 1.05em; padding: 6px 0; }
"""
