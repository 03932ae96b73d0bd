"""A reader backend of the example plugin: no language model, the context's sentence that
shares the most words with the question (a classic extractive baseline, and the shape to
wrap your own model or client in)."""
import time

from engine.api import (
    Backend,
    Capabilities,
    Generation,
    count_tokens,
    prompt_text,
    query_terms,
    split_sentences,
)


class SentenceGenerator:
    """Answers with the best-matching sentence of the prompt's last context, cut to
    `max_new_tokens` words; it declares no capability, so the reader asks for none."""
    capabilities = Capabilities()

    name = "best-sentence"  # what the trace's LLM steps name (no model runs)

    def generate(self, prompt, *, max_new_tokens=32, stop=(), **_unasked) -> Generation:
        started, text = time.perf_counter(), prompt_text(prompt)
        context, _, question = text.rpartition("Context:")[2].rpartition("Question:")
        words = query_terms(question.splitlines()[0] if question else text)
        sentences = [context[a:b] for a, b in split_sentences(context)] or [""]
        best = max(sentences, key=lambda s: len(words & query_terms(s)))
        answer = " ".join(best.split()[:max_new_tokens])
        return Generation(answer, count_tokens(text), count_tokens(answer),
                          time.perf_counter() - started)


SENTENCE = Backend("best-sentence", "the context sentence sharing most words with the "
                   "question (no model)", SentenceGenerator.capabilities, remote=False,
                   make=lambda model, endpoint, precision: SentenceGenerator())
