"""Runs leave the app in the formats the RAG evaluation tools read.

Each run (a RunTrace) becomes one record; what the reader read (`RunTrace.read`, a token
cap's cut included) is the retrieved context, its answer the response, the gold answers
the reference. Formats, as the tools document them (field names checked in
tests/test_exports.py):

  ragas       EvaluationDataset JSONL, one SingleTurnSample per line: user_input,
              retrieved_contexts (strings), retrieved_context_ids (the documents read,
              each once, best first, in the id space of reference_context_ids: the
              supporting documents, so ragas's IDBasedContextRecall is our gold-document
              recall of what was read; four passages of three documents give three),
              reference_contexts (their texts, where a corpus is given), response,
              reference (the first gold answer: ragas takes one string)
              (`EvaluationDataset.from_jsonl`). Beside them, which ragas drops (it drops
              keys it does not know): retrieved_passage_ids (the passages read, one per
              retrieved_contexts entry, in order), run_id ("<paradigm>/<question id>",
              the run's own), paradigm, answer_cut (the answer-token cap cut the
              response) and id_spaces (this paragraph, short, so the file says which id
              space each field uses). `export_files` writes one file per paradigm, and
              runs without gold come after the rest (ragas refuses a reference metric for
              a whole file whose first row has no reference)
  ragchecker  one JSON object {"results": [...]}, each with query_id, query, gt_answer,
              response and retrieved_context [{doc_id, text}] (`RAGResults.from_json`,
              `ragchecker-cli --input_path`)
  flashrag    FlashRAG's dataset JSONL, one item per line: id, question, golden_answers,
              metadata, and the output its pipelines save ({retrieval_result [{id,
              contents: "title\\ntext"}], prompt, pred, metric_score}); its `Dataset`
              reads the lines back as `Item`s, output included

A TREC export is several files (`export_files`): `qrels.txt` (`qid 0 docid 1` for every
supporting document of every question that names them) and one run file per paradigm and
stage, `<paradigm>.<stage>.run` (`qid Q0 docid rank score tag`), the stage's documents at the
rank of the first unit holding them, scored from their rank (trec_eval orders by score and
breaks ties by id, which would reorder a stage's equal scores); trec_eval, ir_measures and
ranx read them.

Runs of several paradigms share a question id, so ids then carry the paradigm
("drrag/5a8b57f2"; ragas's run_id always does, its files being one per paradigm), or the
label each run is stored under (a sweep's grid point: "flat M=20 k=4/5a8b57f2"). RAGChecker
needs a gold answer for every query: runs without one are left out (`without_gold` counts
them), and an export of none with gold is refused by name. A question run twice by one
paradigm (two saved runs, other options) gets "#2" on its second id, so every id is unique.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence

from engine.errors import ConfigError
from engine.metrics import document_ranking
from engine.trace import RunTrace

FORMATS = ("ragas", "ragchecker", "flashrag")
SUFFIXES = {"ragas": "jsonl", "ragchecker": "json", "flashrag": "jsonl"}
FILE_FORMATS = (*FORMATS, "trec")  # what export_files writes (the CLI's --export)
Documents = Callable[[str], "str | None"]  # a document's text by id (a corpus's lookup)


def export(traces: Sequence[RunTrace], fmt: str, labels: Sequence[str] = (),
           runs: Sequence[str] = (), documents: Documents | None = None) -> str:
    """The text of a `fmt` file holding `traces` (see the module docstring); `labels`
    name each run in place of its paradigm (a sweep's grid points). `runs` says what each
    run is where a refusal names it ("saved run 12 'Budapest'"); by default its id in the
    file. `documents` gives a document's text by id (the corpus), for ragas's
    reference_contexts."""
    if fmt not in FORMATS:
        raise ConfigError(f"Unknown export format {fmt!r}. Choose from: {', '.join(FORMATS)}.")
    if not traces:
        raise ConfigError("Nothing to export: no runs were given.")
    names = list(labels) or [t.paradigm for t in traces]
    if len(names) != len(traces):
        raise ConfigError(f"{len(names)} labels for {len(traces)} runs: give one per run.")
    ids = _ids(traces, names, named=fmt == "ragas")
    shown = list(runs) or [f"run {i!r}" for i in ids]
    chosen = list(zip(traces, ids, names, shown, strict=True))
    if fmt == "ragchecker":
        if not any(_has_gold(trace) for trace in traces):
            _check_gold(traces[0], shown[0])
        chosen = [c for c in chosen if _has_gold(c[0])]
    elif fmt == "ragas":  # runs with gold first: ragas reads the first row's columns
        chosen.sort(key=lambda c: not _has_gold(c[0]))
    records = [_RECORDS[fmt](trace, run_id, name, documents)
               for trace, run_id, name, _ in chosen]
    if fmt == "ragchecker":
        return json.dumps({"results": records}, ensure_ascii=False, indent=1)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def without_gold(traces: Sequence[RunTrace]) -> int:
    """How many of `traces` have no gold answer (RAGChecker's export leaves them out; ragas's
    puts them last)."""
    return sum(not _has_gold(trace) for trace in traces)


def _has_gold(trace: RunTrace) -> bool:
    return trace.gold is not None and bool(trace.gold.answers)


# what each id field of a ragas sample holds, written into every sample (ragas ignores it)
RAGAS_ID_SPACES = {
    "retrieved_context_ids": "documents read (their ids, titles in the packaged corpora), "
                             "each once, best first; the id space of reference_context_ids",
    "reference_context_ids": "the question's supporting documents (document ids)",
    "retrieved_passage_ids": "passages read (unit ids), one per retrieved_contexts entry, "
                             "in order",
    "run_id": "the run: <paradigm>/<question id> (#2, #3 for a question run again)"}


def ragas_sample(trace: RunTrace, run_id: str, name: str = "",
                 documents: Documents | None = None) -> dict:
    read = trace.read
    sample = {"user_input": trace.question,
              "retrieved_contexts": [c.unit.text for c in read],
              # documents, as the references are: the ids of IDBasedContextRecall
              "retrieved_context_ids": document_ranking([c.unit.doc_ids for c in read]),
              "response": trace.answer,
              # which run it is and what it read: ragas reads the fields above and ignores
              # these
              "retrieved_passage_ids": [c.unit.id for c in read],
              "run_id": run_id, "paradigm": name or trace.paradigm,
              "corpus": trace.corpus.get("name", ""),  # what was searched
              "answer_cut": trace.answer_cut, "id_spaces": RAGAS_ID_SPACES}
    gold = trace.gold
    if gold is not None and gold.answers:
        sample["reference"] = gold.answers[0]
    if gold is not None and gold.supporting_titles:
        titles = list(dict.fromkeys(gold.supporting_titles))
        sample["reference_context_ids"] = titles
        if documents is not None:
            sample["reference_contexts"] = [text for text in map(documents, titles) if text]
    return sample


def ragchecker_result(trace: RunTrace, run_id: str, name: str = "",
                      documents: Documents | None = None) -> dict:
    _check_gold(trace, f"run {run_id!r}")
    return {"query_id": run_id, "query": trace.question, "gt_answer": trace.gold.answers[0],
            "response": trace.answer,
            "retrieved_context": [{"doc_id": c.unit.id, "text": c.unit.text}
                                  for c in trace.read]}


def flashrag_item(trace: RunTrace, run_id: str, name: str = "",
                  documents: Documents | None = None) -> dict:
    gold = trace.gold
    answers = [step for step in trace.llm_steps if step.purpose == "answer"]
    scores = {name: trace.metrics[key] for name, key in (("em", "EM"), ("f1", "F1"))
              if key in trace.metrics}
    return {"id": run_id, "question": trace.question,
            "golden_answers": list(gold.answers) if gold else [],
            "metadata": {"paradigm": name or trace.paradigm, "config": trace.config,
                         "supporting_titles": list(gold.supporting_titles) if gold else [],
                         "corpus": trace.corpus.get("name", ""),
                         "answer_cut": trace.answer_cut},
            "output": {"retrieval_result": [{"id": c.unit.id,
                                             "contents": f"{c.unit.title}\n{c.unit.text}"}
                                            for c in trace.read],
                       "prompt": answers[-1].prompt if answers else "",
                       "pred": trace.answer, "metric_score": scores}}


def _check_gold(trace: RunTrace, shown: str) -> None:
    """Refuse a run RAGChecker cannot score, naming it as `shown` ("saved run 12")."""
    if trace.gold is None or not trace.gold.answers:
        raise ConfigError(f"RAGChecker needs a gold answer for every query, and {shown} "
                          f"({trace.question[:60]!r}) has none. Export runs of dataset "
                          "questions, or pick the ragas or flashrag format.")


_RECORDS: dict[str, Callable[[RunTrace, str, str, Documents | None], dict]] = {
    "ragas": ragas_sample, "ragchecker": ragchecker_result, "flashrag": flashrag_item}


def _ids(traces: Sequence[RunTrace], names: Sequence[str], named: bool = False
         ) -> list[str]:
    """Each run's id: its gold question id (else its position), with its paradigm (or
    label) in front when the runs mix them or `named` asks for it always."""
    mixed = named or len(set(names)) > 1
    ids, seen = [], Counter()
    for n, (trace, name) in enumerate(zip(traces, names, strict=True)):
        own = trace.gold.id if trace.gold is not None and trace.gold.id else str(n)
        run_id = f"{name}/{own}" if mixed else own
        seen[run_id] += 1  # the same question run again by the same paradigm
        ids.append(run_id if seen[run_id] == 1 else f"{run_id}#{seen[run_id]}")
    return ids


def export_files(traces: Sequence[RunTrace], fmt: str, labels: Sequence[str] = (),
                 documents: Documents | None = None) -> dict[str, str]:
    """{file name: text} of `traces` in `fmt`: one file for ragchecker and flashrag
    (`export`), one per paradigm for ragas (it drops the field that says which), a qrels
    file and a run file per paradigm and stage for trec."""
    if fmt not in FILE_FORMATS:
        raise ConfigError(f"Unknown export format {fmt!r}. Choose from: "
                          f"{', '.join(FILE_FORMATS)}.")
    names = list(labels) or [t.paradigm for t in traces]
    if fmt == "ragas":
        return {f"ragas.{trec_id(name)}.jsonl":
                export([t for t, n in zip(traces, names, strict=True) if n == name], fmt,
                       [name] * names.count(name), documents=documents)
                for name in dict.fromkeys(names)} if traces else {
            "ragas.jsonl": export(traces, fmt)}
    if fmt != "trec":
        return {f"{fmt}.{SUFFIXES[fmt]}": export(traces, fmt, labels, documents=documents)}
    if not traces:
        raise ConfigError("Nothing to export: no runs were given.")
    qrels: dict[str, None] = {}
    runs: dict[str, list[str]] = {}
    for trace, name in zip(traces, names, strict=True):
        qid = _trec_qid(trace)
        if trace.gold is not None:  # graded where the question is judged (grade 0 too)
            qrels.update(dict.fromkeys(f"{qid} 0 {trec_id(doc)} {grade}"
                                       for doc, grade in trace.gold.grades.items()))
        for stage in trace.stages:
            tag = trec_id(f"{name}.{stage.name}")
            docs = document_ranking([c.unit.doc_ids for c in stage.candidates])
            runs.setdefault(f"{tag}.run", []).extend(
                f"{qid} Q0 {trec_id(doc)} {rank} {len(docs) - rank + 1} {tag}"
                for rank, doc in enumerate(docs, start=1))
    return {"qrels.txt": "".join(line + "\n" for line in qrels),
            **{file: "".join(line + "\n" for line in lines) for file, lines in runs.items()}}


def _trec_qid(trace: RunTrace) -> str:
    """The question's id (its text's hash for a typed question), one token."""
    if trace.gold is not None and trace.gold.id:
        return trec_id(trace.gold.id)
    return "q" + hashlib.sha256(trace.question.encode("utf-8")).hexdigest()[:12]


def trec_id(text: str) -> str:
    """A TREC field: white space would split it, so it becomes underscores."""
    return re.sub(r"\s+", "_", text.strip()) or "_"
