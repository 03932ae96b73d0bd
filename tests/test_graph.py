from __future__ import annotations

import numpy as np

from engine.documents import Corpus, Document
from engine.units.graph import LinkConfig, build_link_graph, link_graph, title_surface


def _edges(corpus: Corpus, config: LinkConfig = LinkConfig()) -> set[tuple[str, str, str]]:
    graph = build_link_graph(corpus, config)
    names = ("hyperlink", "title_mention")
    return {(corpus.documents[s].id, corpus.documents[d].id, names[k])
            for s, d, k in zip(graph.src, graph.dst, graph.source, strict=True)}


def _corpus(*docs: tuple[str, str], links: dict[str, tuple[str, ...]] | None = None) -> Corpus:
    links = links or {}
    return Corpus("t", tuple(Document(id=t, title=t, text=x, links=links.get(t, ()))
                             for t, x in docs))


def test_title_mentions_link_whole_words_case_sensitively():
    corpus = _corpus(("Paris", "Paris is a city."),
                     ("Seine", "The Seine flows through Paris. Parisian bridges abound."),
                     ("Water", "water is wet; Seine water too."))
    assert _edges(corpus) == {("Seine", "Paris", "title_mention"),
                              ("Water", "Seine", "title_mention")}


def test_disambiguation_is_stripped_and_longest_title_wins():
    corpus = _corpus(("Mercury (planet)", "Mercury is the closest planet to the Sun."),
                     ("New York City", "New York City is big."),
                     ("New York", "New York is a state."),
                     ("Astronomy", "Astronomy studies Mercury from New York City."))
    assert _edges(corpus) == {("Astronomy", "Mercury (planet)", "title_mention"),
                              ("Astronomy", "New York City", "title_mention")}


def test_short_stopword_and_ambiguous_titles_make_no_links():
    corpus = _corpus(("Ice", "Ice is frozen water."),           # shorter than 4 characters
                     ("Where", "Where is a word."),              # a stopword
                     ("Mars (god)", "Mars was a god."),          # two "Mars" documents,
                     ("Mars (planet)", "Mars is red."),          # none titled exactly Mars
                     ("Space", "Mars and Ice: where is it?"))
    assert _edges(corpus) == set()


def test_titles_mentioned_too_often_are_skipped():
    docs = [("Hubert", "The hub.")] + [(f"Doc {i}", f"Doc {i} mentions Hubert.") for i in range(5)]
    config = LinkConfig(max_doc_freq=0.5, max_doc_freq_floor=1)
    assert not any(dst == "Hubert" for _, dst, _ in _edges(_corpus(*docs), config))
    relaxed = LinkConfig(max_doc_freq=1.0, max_doc_freq_floor=1)
    assert sum(dst == "Hubert" for _, dst, _ in _edges(_corpus(*docs), relaxed)) == 5


def test_hyperlinks_resolve_by_id_or_title_and_keep_their_source():
    corpus = _corpus(("Alpha", "First."), ("Beta", "Mentions Alpha."), ("Gamma", "Third."),
                     links={"Gamma": ("Alpha", "Nowhere"), "Beta": ("Alpha",)})
    assert _edges(corpus) == {("Gamma", "Alpha", "hyperlink"), ("Beta", "Alpha", "hyperlink")}
    only_mentions = LinkConfig(hyperlinks=False)
    assert _edges(corpus, only_mentions) == {("Beta", "Alpha", "title_mention")}


def test_adjacency_is_symmetric_without_self_loops(tiny_corpus):
    graph = build_link_graph(tiny_corpus)
    adj = graph.adjacency.toarray()
    assert (adj == adj.T).all() and not adj.diagonal().any()
    assert graph.degree.sum() == adj.sum()
    danube = tiny_corpus.index_of["Danube"]
    assert {tiny_corpus.documents[i].id for i in graph.neighbors(danube)} == {"Budapest",
                                                                              "Vienna"}


def test_title_surface():
    assert title_surface("Kiss and Tell (1945 film)") == "Kiss and Tell"
    assert title_surface("Paris, Texas") == "Paris, Texas"


def test_cached_graph_round_trips(tiny_corpus, data_dir):
    first = link_graph(tiny_corpus)
    again = link_graph(tiny_corpus)
    assert list((data_dir / "cache" / "graph").iterdir())
    for name in ("src", "dst", "source"):
        assert np.array_equal(getattr(first, name), getattr(again, name))
    assert first.edge_counts() == again.edge_counts()
