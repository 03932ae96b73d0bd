"""Generated questions for a user's own corpus and their round trip's pass rate (issue 53).

    python -m bench.generated_questions DOCS [--count 30] [--model smollm2] [--endpoint URL]

DOCS is a folder (or a .zip) of .md/.txt files, the common case of a user's corpus; the
figures in docs/benchmarks/judging.md are of HTTPX's documentation (the 23 Markdown pages
of github.com/encode/httpx's docs/ folder). It is added as a corpus in a temporary data
directory, then engine.service.judging.Judging.generate_questions runs as the Judge tab
runs it: a question per passage of a stratified sample of `--count`, written by the
packaged reader (or an OpenAI-compatible `--endpoint`), kept if BM25 or the bi-encoder finds
its passage in its top 20. Printed: passages asked, questions written, kept, the pass rate
and each first stage's share of the written questions whose passage it found; seconds per
passage (writing and both retrievals; the first-stage indexes are built before timing);
and every kept question with its source passage.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.common import save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", type=Path)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--endpoint", default="")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        os.environ["FUNNEL_DATA_DIR"] = folder
        from engine.data.corpus import load_corpus
        from engine.data.ingest import ingest
        from engine.logs import configure_logging
        from engine.service.judging import Judging
        from engine.service.store import make_paradigm
        from engine.store.sessions import SessionStore

        configure_logging()
        corpus = ingest("user-docs", args.docs)
        for retriever in ("bm25", "dense"):  # indexes built before the clock starts
            make_paradigm("flat", load_corpus("user-docs"), {"retriever": retriever},
                          retrieval_only=True).run("warm up")
        judging = Judging(SessionStore(Path(folder) / "sessions.duckdb"))
        start = time.perf_counter()
        *_, last = judging.generate_questions("user-docs", "generated", args.count,
                                              args.model, args.endpoint, args.seed)
        seconds = time.perf_counter() - start
    found_by = {r: sum(r in found for _, _, found in last.kept) for r in ("bm25", "dense")}
    result = {
        "corpus": str(args.docs), "documents": len(corpus),
        "writer": f"{'endpoint' if args.endpoint else 'local'}:{args.model}",
        "asked": last.asked, "written": last.written, "kept": len(last.kept),
        "pass_rate": round(last.pass_rate, 3) if last.pass_rate is not None else None,
        "found_by_share_of_written": {r: round(n / max(1, last.written), 3)
                                      for r, n in found_by.items()},
        "seconds_per_passage": round(seconds / max(1, last.asked), 2),
        "kept_questions": [{"question": q.text, "passage": unit.id, "found_by": found}
                           for q, unit, found in last.kept],
    }
    print(json.dumps(result, indent=1))
    print(f"\nsaved {save('generated_questions', result)}")


if __name__ == "__main__":
    main()
