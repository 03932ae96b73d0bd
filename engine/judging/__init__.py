"""Judging a corpus the TREC way: questions for it (engine.judging.questions), pools of
the paradigms' top documents (engine.judging.pools), judged in the browser or by an LLM
judge, stored in the sessions database (engine.store.judgments)."""
