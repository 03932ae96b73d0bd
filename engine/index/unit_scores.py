"""Scores of a given set of units for a query, by unit id: what BM25, the dense index in all
its forms (exact or HNSW, Ray shards, a Qdrant collection) and BM25 standing in for it answer
as `score_units(query, ids)`.

A stage that ranks candidates another stage found (a fusion of BM25 and dense rankings, a
re-ranker reading an index's scores) asks for their scores by id, in the id space of the
units (passage or document ids, as `Candidate.unit.id`): no caller maps ids to an index's
rows. The scores are those the index's own search gives the same units (BM25's score; the
cosine, exact even where the search is approximate). An id the index does not hold (a gold
paragraph a stage's ceiling added, a unit of another granularity) scores -inf: it ranks last.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from engine.documents import Unit
from engine.units.lazy import LazyUnits


def row_mapping(units: Sequence[Unit]) -> Mapping[str, int]:
    """Each unit id's row in `units` (a corpus's passages or documents answer it from their
    spans, without a dictionary of every id)."""
    if isinstance(units, LazyUnits):
        return units.row_of
    return {unit.id: row for row, unit in enumerate(units)}


def scores_by_id(row_of: Mapping[str, int], ids: Sequence[str],
                 score_rows: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The score of each of `ids` (float32, in their order): `score_rows(rows)` of the rows
    `row_of` maps them to, asked once for all of them; -inf for an id it does not hold."""
    out = np.full(len(ids), -np.inf, dtype=np.float32)
    held = [position for position, unit_id in enumerate(ids) if unit_id in row_of]
    if held:
        rows = np.array([row_of[ids[position]] for position in held], dtype=np.int64)
        out[held] = np.asarray(score_rows(rows), dtype=np.float32)
    return out
