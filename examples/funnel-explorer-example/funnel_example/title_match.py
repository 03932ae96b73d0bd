"""A first-stage retriever of the example plugin: the passages of the documents whose titles
the question names (a lexical entity match; its word table is made once per corpus)."""
from collections import defaultdict

from engine.api import Candidate, RetrieverSpec, Stage, StageOutput, build_units, query_terms


class TitleMatch(Stage):
    """Passages by the share of their document title's words the question uses."""
    name, granularity = "title-match", "passages"

    def __init__(self, corpus, passages) -> None:
        self._units, self._by_word = build_units(corpus, passages), defaultdict(list)
        for unit in self._units:
            for word in query_terms(unit.title):
                self._by_word[word].append(unit)

    @property
    def haystack(self) -> int:
        return len(self._units)

    def run(self, query, candidates, k) -> StageOutput:
        shared = defaultdict(int)
        for word in query_terms(query):
            for unit in self._by_word.get(word, ()):
                shared[unit] += 1
        scored = sorted(((n / len(query_terms(u.title)), u) for u, n in shared.items()),
                        key=lambda pair: -pair[0])[:k]
        return StageOutput(tuple(Candidate(unit, score, rank)
                                 for rank, (score, unit) in enumerate(scored, start=1)))


TITLE_MATCH = RetrieverSpec("title-match", "passages of the documents whose titles the "
                            "question names", TitleMatch)
