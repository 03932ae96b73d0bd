"""The LLM judge against the judgments HotpotQA's supporting flags imply (issue 53).

    python -m bench.judge_agreement [--questions N] [--model smollm2] [--endpoint URL]

HotpotQA dev500's first N questions, each with its 10 paragraphs: the 2 supporting ones
imply grade 3 (together they hold the answer's evidence), the 8 distractors grade 0 (they
were picked to look related, so some would rightly be a 1 to a person: the implied grades
are a floor for agreement, not a person's). The judge (engine.judging.llm_judge, UMBRELA's
scale and steps) grades every paragraph through the packaged reader in this process, or an
OpenAI-compatible `--endpoint`. Agreement as the issue asks for it: the 4x4 table, Cohen's
kappa and its linear-weighted form, plus the kappa of relevant or not, binarised at grade 2
as TREC DL binarises; the share of outputs with no readable grade; seconds per judgment.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.common import save

IMPLIED = {True: 3, False: 0}


def hotpotqa(n: int) -> tuple[dict[str, str], dict[str, dict[str, int]], list]:
    """({question id: text}, implied {question id: {paragraph: grade}}, pool units) of
    dev500's first `n` questions."""
    from engine.paths import shared_data_dir
    from engine.store.judgments import PoolUnit

    questions, implied, units = {}, {}, []
    path = shared_data_dir() / "hotpotqa" / "dev500_contexts.jsonl"
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            qid = str(row["question_id"])
            questions[qid] = row["question_text"]
            for i, context in enumerate(row["contexts"]):
                doc = f"{context['title']}#{i}"  # a title can repeat within one question
                implied.setdefault(qid, {})[doc] = IMPLIED[bool(context.get("is_supporting"))]
                units.append(PoolUnit(qid, doc, doc, context["title"],
                                      context["paragraph_text"], (), len(units)))
            if len(questions) == n:
                break
    return questions, implied, units


def binary(grades: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Relevant (grade 2 or 3) as 3, not relevant as 0: the same 4x4 machinery, two grades."""
    return {q: {d: 3 if g >= 2 else 0 for d, g in docs.items()} for q, docs in grades.items()}


def main() -> None:
    from engine.judging.agreement import agreement
    from engine.judging.llm_judge import judge_pool
    from engine.judging.measures import LLM, judge_name
    from engine.logs import configure_logging
    from engine.readers.backends import shared_generator
    from engine.store.judgments import JudgmentStore
    from engine.store.sessions import SessionStore

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--endpoint", default="")
    args = parser.parse_args()
    configure_logging()

    questions, implied, units = hotpotqa(args.questions)
    generator = shared_generator(args.model, args.endpoint)
    judge = judge_name(LLM, args.model, args.endpoint)
    with tempfile.TemporaryDirectory() as folder:
        store = JudgmentStore(SessionStore(Path(folder) / "sessions.duckdb"))
        pool = store.create_pool("hotpotqa", "HotpotQA dev500", "paragraphs", "-", 10,
                                 ["hotpotqa contexts"], units)
        start = time.perf_counter()
        *_, done = judge_pool(store, pool, questions, generator, judge)
        seconds = time.perf_counter() - start
        judged = store.grades("HotpotQA dev500", judge)
        reasons = [j.reasoning for j in store.judgments("HotpotQA dev500", judge)]
    graded = agreement(implied, judged)
    relevant = agreement(binary(implied), binary(judged))
    asked = done.judged + done.unreadable
    result = {
        "questions": len(questions), "paragraphs": len(units), "judge": judge,
        "judged": done.judged, "unreadable": done.unreadable,
        "seconds_per_judgment": round(seconds / max(1, asked), 2),
        "graded": {"matrix": graded.matrix, "exact": round(graded.exact, 3),
                   "kappa": graded.kappa, "weighted_kappa": graded.weighted_kappa,
                   "weighted_ci": graded.weighted_ci},
        "relevant_at_2": {"matrix": [relevant.matrix[0][0::3], relevant.matrix[3][0::3]],
                          "exact": round(relevant.exact, 3), "kappa": relevant.kappa},
        "grades_given": {g: sum(row[g] for row in graded.matrix) for g in range(4)},
        "reasoning_example": reasons[:2],
    }
    print(json.dumps(result, indent=1))
    print(f"\nsaved {save('judge_agreement', result)}")


if __name__ == "__main__":
    main()
