"""DR-RAG's selection classifier C(q, d1, d2) at query time: which model, loading it once,
probabilities for pairs.

C reads the question and two documents in one input, `[CLS] q [SEP] d1 [SEP] d2 [SEP]`,
and says whether the two together are evidence for the question (DR-RAG's labels:
C(q, d*, d*) positive, C(q, d*, d-) and C(q, d-, d-) negative). Each document is cut to
its share of the token budget before the pair is joined, so the second document is never
truncated away.

"trained" names the active classifier version. `python -m engine train classifier` caches
the base version (trained on the training files only; the model is
engine/models/pair_model.py); retraining with annotated labels
adds versions beside it and makes the new one active unless its held-out AUC is lower
(engine.service.annotation); `set_active` switches to any version. Until a
first version exists (a fresh start trains it in the background for 13-22 minutes),
"trained" stands in with "cosines": the same model untrained, the frozen encoder's view
"both documents match the question" (held-out AUC 0.66 against the trained one's 0.77;
docs/benchmarks/drrag.md, "The selection classifier"), so DR-RAG answers at once and the
trace says which decided.
Any Hugging Face sequence-classifier folder or hub id loads too (two labels: softmax; one
logit: sigmoid).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.cache import MANIFEST, CacheInvalid, verify_entry, write_json_atomic
from engine.errors import ResourceMissingError
from engine.models.kinds import SELECTION_CLASSIFIER, TRAINED, option_location, train_command
from engine.paths import data_dir
from engine.trace_details import StandIn

logger = logging.getLogger(__name__)

KIND = SELECTION_CLASSIFIER  # cache family of trained versions
REPORT = "selection.json"  # threshold and held-out metrics, written by training
QUERY_TOKENS = 48  # the question's share of the budget; the rest is split between documents
STAND_IN = "cosines"  # the untrained classifier: the frozen encoder's segment cosines
# where its P is 0.5 (its threshold): cos(q, d1) + cos(q, d2) = 1.65, the best accuracy on the
# pairs of the training questions (bench/classifier_stand_in.py)
STAND_IN_COSINE_SUM = 1.65


@dataclass(frozen=True)
class PairClassifier:
    """A loaded selection classifier with the threshold its training chose."""

    location: str
    tokenizer: Any
    model: Any
    threshold: float = 0.5
    max_length: int = 256

    @property
    def stand_in(self) -> StandIn | None:
        """What the untrained stand-in says in the stages it decides in (None: trained)."""
        if self.location != STAND_IN:
            return None
        return StandIn("cosines", "decided by the untrained stand-in (the frozen encoder's "
                       "cosines): no selection classifier is trained yet; the trained one "
                       "takes over when its training ends")

    def probabilities(self, query: str, pairs: Sequence[tuple[str, str]],
                      batch_size: int = 32) -> list[float]:
        """P(the two documents together answer `query`) for each (d1, d2) text pair."""
        import torch

        out: list[float] = []
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start:start + batch_size]
            inputs = encode_pairs(self.tokenizer, query, batch, self.max_length)
            with torch.inference_mode():
                logits = self.model(**inputs).logits.float()
            probs = (torch.sigmoid(logits[:, 0]) if logits.shape[1] == 1
                     else torch.softmax(logits, dim=-1)[:, 1])
            out += [float(p) for p in probs]
        return out


def _cut(tokenizer: Any, texts: Sequence[str], budgets: Sequence[int]) -> list[str]:
    """Each text cut at the character where its `budget`-th token ends."""
    enc = tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True,
                    verbose=False)  # long texts are expected: they are cut here
    cut = []
    for text, offsets, budget in zip(texts, enc["offset_mapping"], budgets, strict=True):
        cut.append(text if len(offsets) <= budget else text[:offsets[budget - 1][1]])
    return cut


def _token_counts(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    ids = tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
    return [len(x) for x in ids]


def encode_pairs(tokenizer: Any, query: str, pairs: Sequence[tuple[str, str]],
                 max_length: int) -> Any:
    """Model inputs for `[CLS] q [SEP] d1 [SEP] d2 [SEP]`, both documents kept: the query
    gets at most `QUERY_TOKENS`, and a short document leaves its unused share to the other."""
    sep = f" {tokenizer.sep_token} " if tokenizer.sep_token else "\n\n"
    (query,) = _cut(tokenizer, [query], [QUERY_TOKENS])
    room = max_length - _token_counts(tokenizer, [query])[0] - 4  # [CLS] and three [SEP]s
    firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
    n1, n2 = _token_counts(tokenizer, firsts), _token_counts(tokenizer, seconds)
    b1 = [max(1, min(a, max(room // 2, room - b))) for a, b in zip(n1, n2, strict=True)]
    b2 = [max(1, room - b) for b in b1]
    joined = [f"{a}{sep}{b}" for a, b in zip(_cut(tokenizer, firsts, b1),
                                             _cut(tokenizer, seconds, b2), strict=True)]
    return tokenizer([query] * len(pairs), joined, truncation="only_second",
                     max_length=max_length, padding=True, return_tensors="pt")


# --- versions and the active one ---------------------------------------------------------


def versions_dir() -> Path:
    return data_dir() / "cache" / KIND


def _active_file() -> Path:
    return data_dir() / "classifier-active.json"


def versions() -> list[dict]:
    """Every trained version (oldest first): id, created, threshold, labels, held-out
    metrics and [probability, label] scores, and whether it is the active one."""
    active = active_version()
    found = []
    for folder in sorted(versions_dir().glob("*")):
        report_path = folder / REPORT
        if folder.name.startswith(".") or not (folder / MANIFEST).is_file() \
                or not report_path.is_file():
            continue
        report = json.loads(report_path.read_text(encoding="utf-8"))
        found.append({"id": folder.name, "created": report.get("created", ""),
                      "threshold": report.get("threshold"), "labels": report.get("labels", 0),
                      "labels_set_aside": report.get("labels_set_aside", 0),
                      "heldout": report.get("heldout", {}),
                      "heldout_auc": report.get("heldout_auc"),
                      "heldout_scores": report.get("heldout_scores", []),
                      "active": folder.name == active})
    return sorted(found, key=lambda v: v["created"])


def active_version() -> str | None:
    """The id of the version "trained" means: the one last made active, else the newest."""
    path = _active_file()
    if path.is_file():
        chosen = json.loads(path.read_text(encoding="utf-8")).get("id")
        if chosen and (versions_dir() / chosen / REPORT).is_file():
            return chosen
        logger.warning("Active classifier %r is gone; using the newest version.", chosen)
    folders = [f for f in versions_dir().glob("*") if (f / REPORT).is_file()
               and not f.name.startswith(".")]
    newest = max(folders, key=lambda f: f.stat().st_mtime, default=None)
    return newest.name if newest else None


def active_folder() -> Path | None:
    """The folder of the version "trained" means (`active_version`), or None while none is
    trained."""
    version = active_version()
    return None if version is None else versions_dir() / version


def set_active(version: str) -> None:
    """Make `version` (an id from `versions()`) the one "trained" loads."""
    known = [v["id"] for v in versions()]
    if version not in known:
        from engine.errors import ConfigError

        listed = ", ".join(known) or f"none (train one with {train_command(KIND)})"
        raise ConfigError(f"Unknown classifier version {version!r}. Known: {listed}.")
    write_json_atomic(_active_file(), {"id": version})


@lru_cache(maxsize=4)
def load_classifier(location: str, max_length: int = 256) -> PairClassifier:
    """A sequence classifier on the CPU with its trained threshold, loaded once."""
    from engine.models.loading import load_sequence_classifier
    from engine.models.pair_model import model_classes

    model_classes()  # registers the trained versions' model type with the Auto classes
    folder = Path(location)
    # a version trained here is checked before it is read (not one still being built)
    if folder.parent == versions_dir() and not folder.name.startswith("."):
        try:
            verify_entry(folder)
        except CacheInvalid as err:
            raise ResourceMissingError(
                f"Classifier version {folder.name} is damaged ({err}); it was not loaded. "
                "Make another version active in the Annotate tab (or with "
                "activate_classifier), or retrain.") from None
    tokenizer, model, threshold = load_sequence_classifier(location, "the active version",
                                                           REPORT)
    return PairClassifier(location, tokenizer, model, threshold, max_length)


@lru_cache(maxsize=1)
def stand_in_classifier(max_length: int = 256) -> PairClassifier:
    """The untrained pair classifier over the packaged MiniLM's segment means, loaded once:
    P = sigmoid(10 (cos(q, d1) + cos(q, d2) - STAND_IN_COSINE_SUM)), threshold 0.5."""
    from engine.models.pair_model import new_pair_model

    tokenizer, model = new_pair_model(cosine_sum=STAND_IN_COSINE_SUM)
    return PairClassifier(STAND_IN, tokenizer, model, 0.5, max_length)


def shared_classifier(model: str = "trained") -> PairClassifier:
    """The classifier `model` names, loaded once per location (so a switch takes effect);
    "trained" with no version trained yet is the stand-in, said so once in the log."""
    if model == STAND_IN:
        return stand_in_classifier()
    if model == TRAINED and active_folder() is None:
        if not stand_in_classifier.cache_info().currsize:
            logger.warning("No trained selection classifier yet: the untrained '%s' stand-in "
                           "decides until one is trained (%s).", STAND_IN, train_command(KIND))
        return stand_in_classifier()
    return load_classifier(option_location(model, KIND, active_folder))
