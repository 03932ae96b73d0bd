"""Traces of another framework's RAG pipeline, made by its real OpenInference instrumentation.

The pipeline is a LlamaIndex query engine as a user would write it: LlamaIndex's BM25
retriever (top 10) over a QA file's paragraphs (one node each, the title in its metadata),
its SentenceTransformerRerank with the pre-ranker trained here (top 4; the integration
package's, which reports its input and output nodes: llama-index-core's own copy traces as a
bare CHAIN span without them), and an LLM behind
llama.cpp's OpenAI-compatible server (the packaged SmolLM2 GGUF, started by this script).
`openinference-instrumentation-llama-index` traces every query; the spans are written as
OTLP/JSON lines (one ExportTraceServiceRequest per question, ids in hex), the file an
OpenTelemetry collector's file exporter writes; with `--phoenix-out` the same spans also go
to a real Phoenix, and what Phoenix's client reads back (`spans.get_spans`) is written too:
the two spellings of one set of runs. `funnel-engine import-traces` and the app's Sessions
tab read either back as runs (engine.eval.traces).

Run once, with the environment's python (its pins are not ours; it sees our packages):
    python -m venv --system-site-packages .venvs/llamaindex
    .venvs/llamaindex/bin/pip install llama-index-core==0.14.25 \
        llama-index-retrievers-bm25==0.8.0 llama-index-llms-openai-like==0.8.1 \
        llama-index-postprocessor-sbert-rerank==0.6.0 \
        openinference-instrumentation-llama-index==4.6.1 opentelemetry-sdk==1.45.2 \
        opentelemetry-exporter-otlp-proto-common==1.45.2
    .venvs/llamaindex/bin/python -m bench.llamaindex_traces \
        --dataset hotpotqa/train100.json --limit 3 \
        --out tests/data/llamaindex_train100.otlp.jsonl \
        --phoenix-out tests/data/llamaindex_train100.phoenix.json

It needs llama.cpp's server in its own environment (FUNNEL_LLAMA_SERVER_PYTHON, as
tests/test_llama_server.py) and the trained pre-ranker (`python -m engine train preranker`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, answering
from bench.phoenix_traces import READ_BACK, free_port, start_phoenix

PROJECT = "llamaindex-rag"

SERVER_PYTHON = Path(os.environ.get("FUNNEL_LLAMA_SERVER_PYTHON",
                                    ROOT / ".venvs" / "llama-server" / "bin" / "python"))


def start_llama_server() -> tuple[subprocess.Popen, str]:
    from engine.models.packaged import smollm2_gguf_path

    port = free_port()
    server = subprocess.Popen([str(SERVER_PYTHON), "-m", "llama_cpp.server", "--model",
                               str(smollm2_gguf_path()), "--model_alias", "smollm2-gguf",
                               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
                               "--n_threads", "2"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    answering(server, f"{url}/models", 120, 0.5, "llama.cpp's server")
    return server, url


def query_engine(dataset, llm_url: str):
    """LlamaIndex's BM25 -> cross-encoder rerank -> LLM query engine over `dataset`'s
    paragraphs."""
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.llms.openai_like import OpenAILike
    from llama_index.postprocessor.sbert_rerank import SentenceTransformerRerank
    from llama_index.retrievers.bm25 import BM25Retriever

    from engine.models.kinds import PRERANKER
    from engine.models.trained import trained_folder

    folder = trained_folder(PRERANKER)
    if folder is None:
        raise SystemExit("train the pre-ranker first: python -m engine train preranker")
    nodes = [TextNode(text=doc.text, metadata={"title": doc.title}) for doc in dataset.documents]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    rerank = SentenceTransformerRerank(model=str(folder), top_n=4, device="cpu")
    llm = OpenAILike(model="smollm2-gguf", api_base=llm_url, api_key="none",
                     is_chat_model=True, context_window=2048, max_tokens=32, temperature=0.0)
    return RetrieverQueryEngine.from_args(retriever, llm=llm, node_postprocessors=[rerank],
                                          response_mode="compact")


def _hex_ids(node: object) -> object:
    """protobuf's JSON writes ids as base64; OTLP/JSON writes them as hex."""
    if isinstance(node, dict):
        return {key: (base64.b64decode(value).hex() if key in ("traceId", "spanId",
                                                                 "parentSpanId") else
                      _hex_ids(value)) for key, value in node.items()}
    if isinstance(node, list):
        return [_hex_ids(value) for value in node]
    return node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hotpotqa/train100.json",
                        help="a QA file under the shared data folder, or its path")
    parser.add_argument("--limit", type=int, default=5, help="first N questions")
    parser.add_argument("--out", required=True, help="the OTLP/JSON lines file to write")
    parser.add_argument("--phoenix-out", default="",
                        help="also send the spans to a Phoenix started here (.venvs/phoenix, "
                             "as bench.phoenix_traces) and write the spans its client reads "
                             "back to this JSON file: Phoenix's own export of the same runs")
    args = parser.parse_args()

    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.cli.run import _dataset_path
    from engine.data.loaders import read_dataset

    dataset = read_dataset(_dataset_path(args.dataset))
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({
        "service.name": PROJECT, "openinference.project.name": PROJECT}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    phoenix = None
    if args.phoenix_out:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        phoenix, phoenix_url = start_phoenix(tempfile.mkdtemp(prefix="phoenix-"))
        provider.add_span_processor(SimpleSpanProcessor(
            OTLPSpanExporter(f"{phoenix_url}/v1/traces")))
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)
    server, url = start_llama_server()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = query_engine(dataset, url)
        with out.open("w", encoding="utf-8") as lines:
            for question in dataset.questions[:args.limit]:
                started = time.perf_counter()
                answer = engine.query(question.text)
                request = MessageToDict(encode_spans(spans.get_finished_spans()))
                spans.clear()
                lines.write(json.dumps(_hex_ids(request), ensure_ascii=False) + "\n")
                print(f"{time.perf_counter() - started:5.1f} s  {question.text[:60]!r} -> "
                      f"{str(answer).strip()[:40]!r}")
        if phoenix is not None:
            time.sleep(3)  # Phoenix writes what it received in batches
            python = ROOT / ".venvs" / "phoenix" / "bin" / "python"
            read = subprocess.run([str(python), "-c", READ_BACK, phoenix_url, PROJECT],
                                  capture_output=True, text=True, timeout=300, check=True)
            found = json.loads(read.stdout.strip().splitlines()[-1])
            Path(args.phoenix_out).write_text(json.dumps(found, ensure_ascii=False),
                                              encoding="utf-8")
            print(f"wrote {args.phoenix_out}: {len(found)} spans read back from Phoenix")
    finally:
        server.terminate()
        server.wait(30)
        if phoenix is not None:
            phoenix.terminate()
            phoenix.wait(30)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
