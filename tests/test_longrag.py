"""LongRAG: long units by MaxP, the reader's context cap, two reader turns.

The context cap is logic (tiny fixtures); the paradigm end to end runs the real packaged
MiniLM and SmolLM2 on the tiny corpus and checks the plumbing, not answer quality.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.documents import Question
from engine.errors import ConfigError
from engine.paradigms.registry import make_config
from engine.readers.prompts import extract_prompt
from engine.service.store import make_paradigm, process_store
from engine.stages.expand import ReaderContext
from engine.text import count_tokens
from tests.fakes import clusters

QUESTION = Question("q1", "Which river flows through Budapest?", answers=("Danube",),
                    supporting_titles=("Budapest",))
LONGRAG = {"unit_tokens": 128, "k": 2, "long_answer_tokens": 16,
           "reader": {"max_answer_tokens": 8}}


def _size(corpus, doc_id: str) -> int:
    doc = corpus.by_id[doc_id]
    return count_tokens(doc.title) + count_tokens(doc.text)


def test_context_reads_units_best_member_first_until_the_cap(tiny_corpus):
    units = clusters(tiny_corpus)
    members = [d for u in units for d in u.unit.doc_ids]
    whole = sum(_size(tiny_corpus, d) for d in members)
    out = ReaderContext(tiny_corpus, whole + 100).run("q", units, 2)
    assert [c.unit.id for c in out.candidates] == members  # everything fits: unit order
    assert out.candidates[0].parents == (units[0].unit.id,)
    assert out.details.tokens == whole

    first = _size(tiny_corpus, members[0])
    cap = first + 8  # the second document only in part
    out = ReaderContext(tiny_corpus, cap, min_clipped=4).run("q", units, 2)
    assert [c.unit.id for c in out.candidates] == members[:2]
    cut = out.candidates[1].unit
    assert cut.text != tiny_corpus.by_id[members[1]].text
    assert tiny_corpus.by_id[members[1]].text.startswith(cut.text)
    assert out.details.tokens == cap and members[1] in out.details.note

    # too little left to cut: the rest is dropped
    out = ReaderContext(tiny_corpus, first + 3, min_clipped=4).run("q", units, 2)
    assert [c.unit.id for c in out.candidates] == members[:1]


def test_extract_prompt_shows_only_question_and_long_answer():
    built = extract_prompt("Who wrote War and Peace?", " War and Peace is by Leo Tolstoy. ")
    assert built.prompt.endswith("Question: Who wrote War and Peace?\nLong answer: War and "
                                 "Peace is by Leo Tolstoy.\nShort answer:")
    assert built.stop == ("\n",) and "Context" not in built.prompt


@pytest.mark.parametrize("values, message", [
    ({"k": 9}, "k"), ({"turns": 3}, "turns"), ({"unit_scores": "maxsim"}, "unit_scores"),
    ({"context_tokens": 10}, "context_tokens")])
def test_bad_config_names_the_field(values, message):
    with pytest.raises(ConfigError, match=message):
        make_config("longrag", values)


@pytest.mark.slow
def test_longrag_end_to_end(tiny_corpus, shared_models):
    longrag = make_paradigm("longrag", tiny_corpus, LONGRAG)
    trace = longrag.run(QUESTION)
    # the sentence cut is on by default: here the context is under its budget, so it cuts
    # nothing, and the reader reads the context whole
    units, context, cut = trace.stages
    assert [s.name for s in trace.stages] == ["units", "context", "sentences"]
    assert cut.details.tokens == cut.details.tokens_in
    assert [c.unit.text for c in cut.candidates] == [c.unit.text for c in context.candidates] \
        or all(s.kept for s in cut.details.sentences)
    found = process_store().clusters(tiny_corpus, longrag.config.units())
    assert units.n_in == len(found.units) and len(units.candidates) <= 2
    # MaxP: each unit scores as the cosine of its winning chunk, a passage of its documents
    dense = process_store().dense(tiny_corpus, longrag.config.indexed_passages(), "minilm")
    q = dense.encode_queries([QUESTION.text])[0]
    for cand in units.candidates:
        chunk = units.details.best_chunk(cand.unit.id)
        assert chunk.id.split("#")[0] in cand.unit.doc_ids
        assert chunk.cosine == pytest.approx(cand.score, abs=1e-4)
        rows = [r for r, u in enumerate(dense.units) if u.doc_ids[0] in cand.unit.doc_ids]
        assert cand.score == pytest.approx(float(np.max(dense.vectors[rows] @ q)), abs=1e-4)
    assert {c.parents[-1] for c in context.candidates} <= {u.unit.id for u in units.candidates}
    assert context.n_in == len({d for u in units.candidates for d in u.unit.doc_ids})
    long, short = trace.llm_steps  # two turns: a long answer, then the short one from it
    assert [long.purpose, short.purpose] == ["long answer", "answer"]
    assert long.output and long.answer == "" and long.attention.cells
    assert long.output.strip() in short.prompt and "Context" not in short.prompt
    assert trace.answer == short.answer and trace.llm_calls == 2
    assert trace.reader_input_tokens == long.prompt_tokens + short.prompt_tokens
    assert "EM" in trace.metrics

    one = make_paradigm("longrag", tiny_corpus, {**LONGRAG, "turns": 1}).run(QUESTION)
    assert [s.purpose for s in one.llm_steps] == ["answer"]
    assert [s.candidates for s in one.stages] == [s.candidates for s in trace.stages]
