"""The command line: `python -m engine ...`."""

CORPUS_HELP = "wiki | pooled | an added corpus's name | PATH (default %(default)s)"

# what an evaluation searches: the app's start-up corpus by default (`python app.py
# --corpus`, $FUNNEL_CORPUS), so the CLI and the app measure the same haystack, plus the
# QA file's own paragraphs it lacks (engine.data.corpus.with_paragraphs)
EVAL_CORPUS_HELP = ("the corpus searched: wiki | pooled | an added corpus's name | PATH "
                    "(default: the app's, $FUNNEL_CORPUS or wiki); the QA file's own "
                    "paragraphs it lacks are added, as the app's Evaluate adds them")


def default_corpus() -> str:
    import os

    return os.environ.get("FUNNEL_CORPUS", "").strip() or "wiki"
