"""HTML pieces of the UI: stage tables, the gold-lost banner, the answer and status boxes.

Plain functions of a RunTrace (no Gradio). Every corpus or user string is HTML-escaped
before anything is added around it, so a document holding `<script>` shows as text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from app.views.labels import gold_word
from engine.documents import Candidate, Question
from engine.eval.traces import searched_in
from engine.metrics import at_stage, is_gold_sentence
from engine.readers.answers import CUT_MARK
from engine.stages.classify import QUERY
from engine.text import query_terms, snippet
from engine.trace import GoldFlags, RunTrace, StageResult

SNIPPET_CHARS = 320


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def highlight(text: str, query: str, answers: Sequence[str] = ()) -> str:
    """`text` escaped, with gold answers in <mark class=gold> and query words in <mark>."""
    out = esc(text)
    for answer in sorted({a for a in answers if a.strip()}, key=len, reverse=True):
        out = re.sub(rf"(?i)(?<![\w>]){re.escape(esc(answer))}(?!\w)",
                     lambda m: f'<mark class="gold">{m.group(0)}</mark>', out)
    words = query_terms(query)
    if words:
        pattern = "|".join(re.escape(esc(w)) for w in sorted(words, key=len, reverse=True))
        # only outside tags: a word inside <mark class="gold"> markup must not be touched
        out = re.sub(rf"(?i)(<[^>]*>)|\b({pattern})\b",
                     lambda m: m.group(1) or f"<mark>{m.group(2)}</mark>", out)
    return out


def excerpt(text: str, query: str, answers: Sequence[str] = (),
            width: int = SNIPPET_CHARS) -> str:
    """The query-biased snippet of `text`, escaped and highlighted."""
    return highlight(snippet(text, query, width, tuple(answers)), query, answers)


def _flag(gold: Question | None, flags: GoldFlags | None, cand: Candidate, i: int) -> str:
    """Candidate `i`'s gold badges: it holds a gold answer; it is a gold supporting
    document, or, for a judged question, judged relevant (with its grade); or it holds the
    judged question's own document (ArguAna's queries are corpus documents): a cluster or
    group that also holds others, since the stages leave the document's own units out and
    the measures leave it out, as BEIR does."""
    if flags is None:
        return ""
    marks = []
    if i < len(flags.answer) and flags.answer[i]:
        marks.append('<span class="fe-badge fe-answer" title="holds a gold answer">answer</span>')
    if gold is not None and gold.judged_only:
        if gold.own_document and gold.own_document in cand.unit.doc_ids:
            marks.append('<span class="fe-badge fe-self" title="holds the question\'s own '
                         'document: the measures leave that document out, as BEIR does '
                         '(ignore_identical_ids)">the question</span>')
        grade = max((gold.grades.get(d, 0) for d in cand.unit.doc_ids), default=0)
        if grade >= 1:
            marks.append(f'<span class="fe-badge fe-support" title="judged relevant, grade '
                         f'{grade}">relevant ({grade})</span>')
    elif i < len(flags.support) and flags.support[i]:
        marks.append('<span class="fe-badge fe-support" title="a gold supporting document">'
                     'support</span>')
    return " ".join(marks)


def stage_table(trace: RunTrace, index: int) -> str:
    """One stage's candidates as an HTML table; clusters and documents expand to what the
    later stages kept of them."""
    stage = trace.stages[index]
    if stage.granularity == QUERY:  # a decision about the query: no candidates to list
        return (f"<div class='fe-stage'><b>{esc(stage.name)}</b> (query), "
                f"{stage.seconds:.2f} s: {esc(stage.details.note)}</div>")
    flags = trace.gold_flags[index] if index < len(trace.gold_flags) else None
    answers = trace.gold.answers if trace.gold else ()
    later = trace.stages[index + 1:]
    # documents found through another document (DR-RAG's q + d) name it under their title
    earlier = {c.unit.id: c.unit.title for s in trace.stages[:index]
               if s.granularity == "documents" for c in s.candidates}
    rows = []
    for i, cand in enumerate(stage.candidates):
        body = excerpt(cand.unit.text, trace.question, answers) \
            if cand.unit.text else esc(", ".join(cand.unit.doc_ids))
        chunk = stage.details.best_chunk(cand.unit.id)
        if chunk:  # the chunk that won the unit's MaxP score
            body += (f"<br><small>best chunk {esc(chunk.id)} (cosine {chunk.cosine:.4f}):"
                     f" {excerpt(chunk.text, trace.question, answers, 200)}</small>")
        children = _children(cand, stage, later, trace.question, answers)
        if children:
            body = f"<details><summary>{body}</summary>{children}</details>"
        title = esc(cand.unit.title)
        if stage.granularity == "documents" and cand.parents and cand.parents[-1] in earlier:
            title += f"<br><small>found with q + {esc(earlier[cand.parents[-1]])}</small>"
        rows.append(f"<tr><td>{cand.rank}</td><td>{cand.score:.4f}</td>"
                    f"<td>{title}</td><td>{body}</td>"
                    f"<td>{_flag(trace.gold, flags, cand, i)}</td></tr>")
    read = ""
    if index == len(trace.stages) - 1 and trace.llm_steps:
        read = " · sent to the reader"
        if len(trace.read) < len(stage.candidates):
            read += f", which read the first {len(trace.read)} within its token cap"
    note = f"<br><small>{esc(stage.details.note)}</small>" if stage.details.note else ""
    if stage.details.order:
        note += f"<br><small>listed {esc(stage.details.order)}, not by score</small>"
    head = (f"<div class='fe-stage'><b>{esc(stage.name)}</b> ({esc(stage.granularity)})"
            f"{_made_by(trace)}: {stage_in(stage)} in, {len(stage.candidates)} kept, "
            f"{stage.seconds:.2f} s{read}{note}</div>")
    return (f"{head}<table class='fe-table'><thead><tr><th>rank</th><th>score</th>"
            f"<th>title</th><th>text</th><th>gold</th></tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>" + decisions_table(trace, index) + sentences_table(trace, index))


def stage_in(stage: StageResult) -> str:
    """A stage's candidates in, as a stage's head says it: an imported one's with what
    says it (its span, its input documents, the corpus given), "?" where nothing does."""
    searched = searched_in(stage)
    said = stage.settings.get("searched")
    if searched is None:
        return ("<span title='the trace does not say how many candidates this stage "
                "searched (give it as import-traces --searched, or in the span&#39;s "
                "metadata as searched)'>? (not in the trace)</span>")
    return f"{searched:,}" + (f" <small>({esc(said)})</small>" if said else "")


def _made_by(trace: RunTrace) -> str:
    """", by PIPELINE" for an imported run (the service or project its spans name)."""
    pipeline = trace.config.get("pipeline") if "imported" in trace.config else None
    return f", by {esc(pipeline)}" if pipeline else ""


def sentences_table(trace: RunTrace, index: int) -> str:
    """The sentence cut's view of stage `index` (empty if it weighed no sentence): every
    sentence of the passages it was given, best score first, kept (by its score, or as the
    neighbour a kept sentence leans on) or cut, its tokens, and whether it is a gold
    supporting sentence where the dataset marks them. Collapsed: a handful of passages
    hold dozens of sentences."""
    stage = trace.stages[index]
    sentences = stage.details.sentences
    if not sentences:
        return ""
    answers = trace.gold.answers if trace.gold else ()
    gold = trace.gold.supporting_sentences if trace.gold else ()
    scorer = stage.settings.get("sentence_scorer", "")
    rows_read = _heatmap_rows(trace)
    rows = []
    for n, item in enumerate(sorted(sentences, key=lambda x: -x.score), start=1):
        decision = ("<span class='fe-badge fe-kept-badge'>kept</span>" if item.kept
                    else "<span class='fe-badge fe-dropped'>cut</span>")
        if item.why:
            decision += f" <small>({esc(item.why)})</small>"
        if item.kept and (item.passage, item.text) in rows_read:
            decision += f" <small>heatmap s{rows_read[item.passage, item.text]}</small>"
        badge = " <span class='fe-badge fe-support'>gold</span>" \
            if gold and is_gold_sentence(item.text, gold) else ""
        rows.append(f"<tr><td>{n}</td><td>{item.score:.4f}</td>"
                    f"<td>{esc(item.passage)}</td>"
                    f"<td>{highlight(item.text, trace.question, answers)}{badge}</td>"
                    f"<td>{item.tokens or ''}</td><td>{decision}</td></tr>")
    kept = sum(item.kept for item in sentences)
    saved = ""
    if stage.details.tokens is not None and stage.details.tokens_in:
        saved = (f", {stage.details.tokens:,} of {stage.details.tokens_in:,} tokens read "
                 f"({stage.details.tokens_in - stage.details.tokens:,} saved)")
    head = f"score ({esc(scorer)})" if scorer else "score"
    return (f"<details class='fe-sentences'><summary><b>{esc(stage.name)}</b>: "
            f"{len(sentences)} sentences weighed, {kept} kept, {len(sentences) - kept} cut"
            f"{saved}</summary>"
            f"<table class='fe-table fe-sentences'><thead><tr><th>#</th><th>{head}</th>"
            "<th>passage</th><th>sentence</th><th>tokens</th><th>decision</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></details>")


def _heatmap_rows(trace: RunTrace) -> dict[tuple[str, str], int]:
    """{(passage id, sentence): its row on the heatmap (s1 first, reading order)} of the
    sentences the reader read after a sentence cut (none without their attention)."""
    read = next((s.attention for s in trace.llm_steps
                 if s.attention is not None and s.attention.sentence_texts), None)
    if read is None:
        return {}
    rows = zip(read.sentence_passages, read.sentence_texts, strict=True)
    return {key: n for n, key in enumerate(rows, start=1)}


def decisions_table(trace: RunTrace, index: int) -> str:
    """The selection classifier's calls of stage `index` (empty if it made none): both
    documents (text expandable), P, the threshold, kept or dropped, and whether both are
    gold supporting documents when the gold is known."""
    calls = trace.stages[index].details.calls
    if not calls:
        return ""
    texts = {c.unit.id: c.unit.text for s in trace.stages for c in s.candidates}
    gold = set(trace.gold.supporting_titles) if trace.gold else None
    answers = trace.gold.answers if trace.gold else ()

    def document(doc_id: str, title: str) -> str:
        text = texts.get(doc_id, "")
        return (f"<details><summary>{esc(title)}</summary>"
                f"{highlight(text, trace.question, answers)}</details>" if text else esc(title))

    rows = []
    for n, call in enumerate(calls, start=1):
        decision = ("<span class='fe-badge fe-kept-badge'>kept</span>" if call.kept
                    else "<span class='fe-badge fe-dropped'>dropped</span>")
        both = "" if gold is None else (
            "<span class='fe-badge fe-support'>both gold</span>"
            if call.d1_title in gold and call.d2_title in gold else "no")
        rows.append(f"<tr><td>{n}</td><td>{document(call.d1, call.d1_title)}</td>"
                    f"<td>{document(call.d2, call.d2_title)}</td>"
                    f"<td>{call.probability:.3f}</td><td>{call.threshold:.3f}</td>"
                    f"<td>{decision}</td><td>{both}</td></tr>")
    note = f" ({esc(trace.stages[index].details.note)})" if trace.stages[index].details.note \
        else ""
    return (f"<div class='fe-stage'>classifier C(q, d1, d2) calls of "
            f"<b>{esc(trace.stages[index].name)}</b>: {len(calls)}{note}</div>"
            "<table class='fe-table fe-decisions'><thead><tr><th>#</th><th>d1</th><th>d2</th>"
            "<th>P</th><th>threshold</th><th>decision</th><th>gold</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _children(cand: Candidate, stage: StageResult, later: Sequence[StageResult], query: str,
              answers: Sequence[str]) -> str:
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
            items = [f"<li>{esc(c.unit.id)} (rank {c.rank}): "
                     f"{excerpt(c.unit.text, query, answers, 160)}</li>" for c in passages]
            return f"<ul class='fe-children'>{''.join(items)}</ul>"
    return ""


def shown_answer(answer: str, cut: bool) -> str:
    """An answer, escaped; one the reader's answer-token cap cut ends in "…" with a tooltip
    saying so (EM and F1 score it without the mark)."""
    if not cut:
        return esc(answer)
    return (f"{esc(answer)}<span class='fe-cut' title='cut at the reader&#39;s answer-token "
            f"cap (reader.max_answer_tokens); it ends at the last whole word, and EM/F1 "
            f"score it without this mark'>{CUT_MARK}</span>")


def answer_box(trace: RunTrace) -> str:
    shown = shown_answer(trace.answer, trace.answer_cut) if trace.answer else "(none)"
    parts = [f"<div class='fe-answer-box'><b>Answer:</b> {shown}"]
    if trace.answer_cut:
        cap = (trace.config.get("reader") or {}).get("max_answer_tokens")
        parts.append(f" <small>(cut at the reader's {f'{cap}-token ' if cap else ''}answer "
                     "cap, reader.max_answer_tokens)</small>")
    if trace.gold is not None:
        gold = esc(' | '.join(trace.gold.answers)) or \
            "<i>no answers (the question is judged: its documents are the gold)</i>"
        parts.append(f"<br><b>Gold:</b> {gold}")
        m = trace.metrics
        if "EM" in m:
            parts.append(f"<br>EM {m['EM']:.0f} · F1 {m['F1']:.2f}")
    parts.append(f"<br><small>{trace.reader_input_tokens:,} tokens sent to the reader; "
                 f"{sum(s.seconds for s in trace.stages) + trace.reader_seconds:.2f} s in "
                 "all</small></div>")
    return "".join(parts)


def error_box(message: str) -> str:
    return f"<div class='fe-error'>{esc(message)}</div>"


def compare_table(traces: Sequence[RunTrace], heads: Sequence[str] = ()) -> str:
    """Runs side by side: the reader budget, the answer and its scores, then every cut
    (stage) with what it kept, its seconds, and whether the gold answer and the gold
    documents are still in. `heads` are the columns' (already escaped) headings; the
    paradigm names by default."""
    def final(key: str) -> list[str]:
        return [f"{t.metrics[key]:.0f}" if key in t.metrics else "" for t in traces]

    rows = [("reader tokens", [f"{t.reader_input_tokens:,}" for t in traces]),
            ("seconds", [f"{t.seconds:.2f}" for t in traces]),
            ("answer", [shown_answer(t.answer, t.answer_cut) if t.answered
                        else "<i>no reader ran</i>" for t in traces]),
            ("EM / F1", [_scores(t) for t in traces])]
    rows += [(f"AR@{k} (final passages)", final(f"AR@{k}")) for k in (1, 2, 3, 4)
             if any(f"AR@{k}" in t.metrics for t in traces)]
    depth = max((len(t.stages) for t in traces), default=0)
    rows += [(f"cut {i + 1}", [_cut(t, i) for t in traces]) for i in range(depth)]
    head = "".join(f"<th>{h}</th>" for h in heads) if heads else \
        "".join(f"<th>{esc(t.paradigm)}</th>" for t in traces)
    body = "".join(f"<tr><td>{esc(name)}</td>{''.join(f'<td>{v}</td>' for v in values)}</tr>"
                   for name, values in rows)
    return (f"<table class='fe-table fe-compare'><thead><tr><th></th>{head}</tr></thead>"
            f"{body}</table>")


def _scores(trace: RunTrace) -> str:
    """A run's EM / F1, or why it has none: a typed question has no gold answer to score
    against, a test collection's query has no answers (it is measured by its judgments,
    and its run stops before the reader), and a run whose reader did not answer has
    nothing to score."""
    if "EM" in trace.metrics:
        return f"{trace.metrics['EM']:.0f} / {trace.metrics['F1']:.2f}"
    if trace.gold is None:
        return "<i>no gold</i>"
    return "<i>no answers</i>" if trace.gold.judged_only else "<i>not answered</i>"


def _cut(trace: RunTrace, index: int) -> str:
    """One stage of a run as a compare cell: kept of in, seconds, gold still in."""
    if index >= len(trace.stages):
        return ""
    s = trace.stages[index]
    if s.granularity == QUERY:  # a decision about the query, not a cut
        decision = s.details.decision
        verdict = "retrieve" if decision is None or decision.retrieve else "no retrieval"
        p = decision.probability if decision else None
        return (f"<b>{esc(s.name)}</b>: {verdict}" + (f" (P {p:.3f})" if p is not None else "")
                + f", {s.seconds:.2f} s")
    searched = searched_in(s)
    cell = (f"<b>{esc(s.name)}</b>: {len(s.candidates)} of "
            f"{'?' if searched is None else f'{searched:,}'} {esc(s.granularity)}, "
            f"{s.seconds:.2f} s")
    m = trace.metrics
    if at_stage("AR", s.name) in m:
        held = m[at_stage("AR", s.name)] > 0
        cell += (f"<br><span class='{'fe-yes' if held else 'fe-no'}'>gold answer "
                 f"{'in' if held else 'out'}</span>")
    if trace.gold is not None and trace.gold.supporting_titles \
            and at_stage("gold_doc_recall", s.name) in m:
        cell += (f" · {gold_word(trace.gold.judged_only)} documents "
                 f"{m[f'gold_doc_recall@{s.name}']:.2f}")
    if at_stage("nDCG@10", s.name) in m:  # trec_eval's, of the cut's documents
        cell += (f"<br>nDCG@10 {m[f'nDCG@10@{s.name}']:.2f} · RR {m[f'RR@{s.name}']:.2f}"
                 f" · R@4 {m[f'R@4@{s.name}']:.2f}")
    if at_stage("Judged@10", s.name) in m:  # a judged question's: graded, partial judgments
        cell += (f" · MAP {m[f'AP@{s.name}']:.2f} · Judged@10 "
                 f"{m[f'Judged@10@{s.name}']:.2f}")
    return cell


def final_passages(trace: RunTrace, shown: int = 4) -> str:
    """What the reader read, best first: the first `shown`, the rest collapsed (LongRAG
    reads 17-20 documents); a note counts what a token cap left unread."""
    answers = trace.gold.answers if trace.gold else ()
    sent, read = (trace.stages[-1].candidates if trace.stages else ()), trace.read
    items = [f"<li><b>{esc(c.unit.title)}</b>: "
             f"{excerpt(c.unit.text, trace.question, answers)}</li>" for c in read]
    more = (f"<details><summary>{len(items) - shown} more read</summary><ol start="
            f"'{shown + 1}' class='fe-final-more'>{''.join(items[shown:])}</ol></details>"
            if len(items) > shown else "")
    unread = (f"<small>{len(sent) - len(read)} more not read: over the token cap</small>"
              if len(read) < len(sent) else "")
    return f"<ol class='fe-final'>{''.join(items[:shown])}</ol>{more}{unread}"
