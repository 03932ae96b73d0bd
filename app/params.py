"""Stage-parameter widgets shared by the Explore and Compare tabs, and their config JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from engine.attention import SCHEMES
from engine.cluster import ALGORITHMS
from engine.paradigms import FlatConfig, FunnelConfig

FUNNEL, FLAT = FunnelConfig(), FlatConfig()


@dataclass
class ParamWidgets:
    """The widgets of one parameter panel, in the order `config_json` takes them."""

    K: gr.Slider
    N: gr.Slider
    H: gr.Slider
    algorithm: gr.Dropdown
    S: gr.Dropdown
    lr: gr.Slider
    aggregation: gr.Dropdown
    M: gr.Slider
    k: gr.Slider

    def inputs(self) -> list:
        return [self.K, self.N, self.H, self.algorithm, self.S, self.lr, self.aggregation,
                self.M, self.k]


def param_widgets() -> ParamWidgets:
    """The parameter accordion (defaults = the engine's defaults)."""
    with gr.Accordion("Stage parameters", open=False):
        with gr.Row():
            K = gr.Slider(1, 50, value=FUNNEL.K, step=1, label="K: clusters from BM25 (funnel)")
            N = gr.Slider(1, 50, value=FUNNEL.N, step=1, label="N: documents pre-ranked (funnel)")
            H = gr.Slider(1, 20, value=FUNNEL.H, step=1, label="H: passages post-ranked (funnel)")
        with gr.Row():
            algorithm = gr.Dropdown(list(ALGORITHMS), value=FUNNEL.cluster_algorithm,
                                    label="cluster algorithm")
            S = gr.Dropdown([512, 1024, 2048, 4096], value=FUNNEL.cluster_tokens,
                            label="S: cluster size (tokens)")
            lr = gr.Slider(1, 64, value=FUNNEL.reader.lr, step=1,
                           label="lr: representative tokens")
            aggregation = gr.Dropdown(list(SCHEMES), value=FUNNEL.reader.aggregation,
                                      label="attention aggregation")
        with gr.Row():
            M = gr.Slider(4, 200, value=FLAT.M, step=1, label="M: passages from dense (flat)")
            k = gr.Slider(1, 20, value=FLAT.k, step=1, label="k: passages read (flat)")
    return ParamWidgets(K, N, H, algorithm, S, lr, aggregation, M, k)


def config_json(paradigm: str, K, N, H, algorithm, S, lr, aggregation, M, k) -> str:
    """The JSON config of `paradigm` from the widget values (only its own options)."""
    if paradigm == "funnel":
        config = {"K": int(K), "N": int(N), "H": int(H), "cluster_algorithm": algorithm,
                  "cluster_tokens": int(S),
                  "reader": {"lr": int(lr), "aggregation": aggregation}}
    elif paradigm == "flat":
        config = {"M": int(M), "k": int(k), "reader": {"lr": int(lr)}}
    else:
        config = {}
    return json.dumps(config)
