"""What every view calls a measure and a track, once.

A QA file's questions have answers and gold supporting documents, and a reader reads their
last cut. A test collection's questions (`judged`: graded judgments, no answers) have
documents judged relevant instead, and no reader runs on them: their labels say "relevant"
where the others say "gold", and "the last cut" where the others say "read".
"""

from __future__ import annotations

# what Diagnose follows through the cuts (engine.eval.outcomes.TRACKS)
TRACK_LABELS = {"answer": "the gold answer", "support": "all supporting documents",
                "relevant": "a relevant document", "sentences": "all supporting sentences"}
JUDGED_TRACK_LABELS = {"support": "every relevant document"}
# what a question's outcome on a track counts: the first cut after which ...
LOST_AFTER = {"answer": "the gold answer stayed lost",
              "support": "a supporting document stayed lost",
              "relevant": "no relevant document was left",
              "sentences": "a supporting sentence stayed cut"}
JUDGED_LOST_AFTER = {"support": "a relevant document stayed lost"}


def track_label(track: str, judged: bool = False) -> str:
    """How a track is named where the questions are `judged` or not."""
    return (JUDGED_TRACK_LABELS if judged else {}).get(track, TRACK_LABELS[track])


def lost_after(track: str, judged: bool = False) -> str:
    """What a "lost at <cut>" outcome on `track` says happened after the cut."""
    return (JUDGED_LOST_AFTER if judged else {}).get(track, LOST_AFTER[track])


def gold_word(judged: bool) -> str:
    """What a question's gold documents are called: "gold", or "relevant" (judged so)."""
    return "relevant" if judged else "gold"


def gold_documents(judged: bool) -> str:
    """The documents a question's document recall counts, as an adjective."""
    return f"{gold_word(judged)}-document"


def final_cut(judged: bool) -> str:
    """What the last cut is to a run: sent to the reader, or where a judged run stops."""
    return "at the last cut" if judged else "sent to the reader"


def metric_labels(judged: bool) -> dict[str, str]:
    """The labels of the per-question metrics paired tests compare (engine.eval.paired)."""
    return {"gold_doc_recall": f"{gold_documents(judged)} recall "
                               f"({final_cut(judged) if judged else 'read'})",
            **{m: f"{m} ({final_cut(judged)})" for m in ("nDCG@10", "MRR", "MAP")},
            "seconds": "seconds per question (median)"}
