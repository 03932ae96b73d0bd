"""Readers for the QA formats in ../shared/data: each returns a Dataset.

Formats (names used in errors and on the CLI):
- `hotpotqa-contexts`: JSONL, `question_id, question_text, answers_objects[].spans,
  contexts[]{id, title, paragraph_text, is_supporting}`
- `hotpotqa`: JSON list, `_id, question, answer, type, supporting_facts, context`
- `musique`: JSON list or JSONL, `id, question, answer, answer_aliases,
  paragraphs[]{idx, title, paragraph_text, is_supporting}`
- `squad`: SQuAD v1/v2 JSON, `data[].paragraphs[].qas[]`
- `nq-open`: JSONL, `question, answer[]` or a plain `question, answer` (no paragraphs)

A dataset's paragraphs become documents keyed by title; paragraphs sharing a title are
merged (engine.data.merge.merge_documents), so gold supporting titles are document ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from engine.data.loaders.jsonio import Record
from engine.documents import Document, Question

Paragraph = tuple[str, str]  # (title, text)


def source_name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _strings(rec: Record, name: str) -> tuple[str, ...]:
    values = rec.get(name, list, [])
    if not all(isinstance(v, str) for v in values):
        raise rec.error("expected a list of strings", field=name)
    return tuple(values)


def _paragraph(rec: Record, field: str, item: object, text_key: str) -> dict:
    if not isinstance(item, dict) or not isinstance(item.get("title"), str) \
            or not isinstance(item.get(text_key), str):
        raise rec.error(f"each item needs string 'title' and {text_key!r}", field=field)
    return item


# --- hotpotqa-contexts --------------------------------------------------------------------


def parse_hotpotqa_contexts(rec: Record) -> tuple[Question, list[Paragraph]]:
    answers: list[str] = []
    for obj in rec.get("answers_objects", list):
        spans = obj.get("spans", []) if isinstance(obj, dict) else None
        if not isinstance(spans, list):
            raise rec.error("each answer object needs a 'spans' list", field="answers_objects")
        answers.extend(str(s) for s in spans)
    contexts = [_paragraph(rec, "contexts", c, "paragraph_text")
                for c in rec.get("contexts", list)]
    supporting = [c for c in contexts if c.get("is_supporting")]
    question = Question(
        id=str(rec.get("question_id", (str, int))), text=rec.text("question_text"),
        answers=tuple(answers),
        supporting_titles=_unique(c["title"] for c in supporting),
        supporting_paragraph_ids=tuple(str(c.get("id", "")) for c in supporting),
        type=_yes_no_or(answers, "span"), source=source_name(rec.path),
    )
    return question, [(c["title"], c["paragraph_text"]) for c in contexts]


# --- hotpotqa (original) ------------------------------------------------------------------


def parse_hotpotqa(rec: Record) -> tuple[Question, list[Paragraph]]:
    paragraphs = []
    for item in rec.get("context", list):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], list)):
            raise rec.error("each item must be [title, [sentences]]", field="context")
        paragraphs.append((item[0], "".join(str(s) for s in item[1]).strip()))
    facts = rec.get("supporting_facts", list)
    if not all(isinstance(f, list) and f and isinstance(f[0], str) for f in facts):
        raise rec.error("each item must be [title, sentence_index]", field="supporting_facts")
    answer = rec.text("answer")
    question = Question(
        id=str(rec.get("_id", (str, int))), text=rec.text("question"), answers=(answer,),
        supporting_titles=_unique(f[0] for f in facts),
        supporting_paragraph_ids=tuple(f"{f[0]}:{f[1]}" for f in facts if len(f) > 1),
        supporting_sentences=_supporting_sentences(rec, facts),
        type=str(rec.get("type", str, "")), source=source_name(rec.path),
    )
    return question, paragraphs


def _supporting_sentences(rec: Record, facts: list) -> tuple[str, ...]:
    """The text of each supporting fact [title, sentence index] in the record's context, as
    the sentence-level gold; a fact naming a sentence the context does not hold (HotpotQA
    has a few) is skipped."""
    sentences = {item[0]: item[1] for item in rec.get("context", list)}
    out = []
    for fact in facts:
        held = sentences.get(fact[0], [])
        if len(fact) > 1 and isinstance(fact[1], int) and 0 <= fact[1] < len(held) \
                and str(held[fact[1]]).strip():
            out.append(str(held[fact[1]]).strip())
    return tuple(dict.fromkeys(out))


# --- musique ------------------------------------------------------------------------------


def parse_musique(rec: Record) -> tuple[Question, list[Paragraph]]:
    paragraphs = [_paragraph(rec, "paragraphs", p, "paragraph_text")
                  for p in rec.get("paragraphs", list)]
    supporting = [p for p in paragraphs if p.get("is_supporting")]
    qid = str(rec.get("id", (str, int)))
    question = Question(
        id=qid, text=rec.text("question"),
        answers=(rec.text("answer"), *_strings(rec, "answer_aliases")),
        supporting_titles=_unique(p["title"] for p in supporting),
        supporting_paragraph_ids=tuple(str(p.get("idx", "")) for p in supporting),
        type=qid.split("__")[0] if "__" in qid else "multi-hop", source=source_name(rec.path),
    )
    return question, [(p["title"], p["paragraph_text"]) for p in paragraphs]


# --- nq-open ------------------------------------------------------------------------------


def parse_nq_open(rec: Record, number: int) -> tuple[Question, list[Paragraph]]:
    one = rec.obj.get("answer")  # a plain {question, answer} file gives one string
    answers = (one,) if isinstance(one, str) and one.strip() else _strings(rec, "answer")
    if not answers:
        raise rec.error("needs at least one answer string", field="answer")
    # without ids, numbered by line under the file's name (NQ-open's own file: "nq-3", as
    # its stored evaluations name its questions)
    prefix = "nq" if rec.path.parent.name == "nq_open" else rec.path.stem
    question = Question(id=str(rec.obj.get("id", f"{prefix}-{number}")), text=rec.text("question"),
                        answers=answers, type="open", source=source_name(rec.path))
    return question, []


# --- squad --------------------------------------------------------------------------------


def parse_squad(path: Path, root: object) -> Iterator[tuple[Question | None, list[Paragraph]]]:
    # json.load keeps no line numbers; errors name the JSON path (data[0].paragraphs[3]...)
    top = Record(path, None, root, "squad")
    for a_index, article in enumerate(top.get("data", list)):
        art = Record(path, None, article, "squad", f"data[{a_index}]")
        title = art.text("title")
        for p_index, paragraph in enumerate(art.get("paragraphs", list)):
            par = Record(path, None, paragraph, "squad", f"{art.where}.paragraphs[{p_index}]")
            yield None, [(title, par.text("context"))]
            for q_index, qa in enumerate(par.get("qas", list)):
                q = Record(path, None, qa, "squad", f"{par.where}.qas[{q_index}]")
                answers = _unique(
                    str(a.get("text", "")) for a in q.get("answers", list) if isinstance(a, dict)
                )
                impossible = bool(q.get("is_impossible", bool, False))
                yield Question(
                    id=str(q.get("id", (str, int))), text=q.text("question"), answers=answers,
                    supporting_titles=(title,), supporting_paragraph_ids=(f"{title}:{p_index}",),
                    type="unanswerable" if impossible else "span", source=source_name(path),
                ), []


# --- helpers ------------------------------------------------------------------------------


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _yes_no_or(answers: list[str], default: str) -> str:
    return "yes/no" if answers and all(a.lower() in ("yes", "no") for a in answers) else default


def paragraphs_to_documents(paragraphs: Iterable[Paragraph], source: str) -> list[Document]:
    """One Document per (title, text) pair, id = title; merging happens in engine.data.corpus."""
    return [Document(id=title.strip(), title=title.strip(), text=text, sources=(source,))
            for title, text in paragraphs if title.strip() and text.strip()]
