"""The selection classifier's model: MiniLM reads `[CLS] q [SEP] d1 [SEP] d2 [SEP]` as one
input, and a three-weight head scores the cosines between the mean token vectors of its
three segments: cos(q, d1), cos(q, d2) and cos(d1, d2).

Why not the stock `BertForSequenceClassification`: its head reads the [CLS] vector through
a pooler, and all-MiniLM-L6-v2 was trained for mean pooling, so [CLS] carries little; on
the 888 training pairs its loss never left ln 2 (docs/benchmarks/drrag.md, "The selection
classifier"). Mean vectors of each segment keep the bi-encoder's geometry, so this head
starts where the bi-encoder already is (held-out AUC 0.66 before any training, as "the two
documents each match the question") and fine-tuning moves the encoder and the head from
there.

It is a `transformers` sequence classifier with one logit (P = sigmoid): saved and loaded
with `save_pretrained` / `AutoModelForSequenceClassification.from_pretrained` once
`model_classes()` has registered it. The classes are built on first use, so importing this
module does not import torch.
"""

from __future__ import annotations

from functools import lru_cache

MODEL_TYPE = "segment-pair-bert"
FEATURES = ("cos(q, d1)", "cos(q, d2)", "cos(d1, d2)")
INITIAL_SCALE = 10.0  # logit = 10 * (cos(q, d1) + cos(q, d2) - 1) before training


def segment_cosines(hidden, input_ids, attention_mask, sep_token_id: int):
    """(batch, 3) cosines between the mean token vectors of the question and the two
    documents; segments end at the first, second and third [SEP] ([CLS] and [SEP]s are
    left out of the means)."""
    import torch

    is_sep = input_ids == sep_token_id
    segment = torch.cumsum(is_sep.long(), dim=1) - is_sep.long()
    inside = attention_mask.bool() & ~is_sep
    inside[:, 0] = False  # [CLS]
    means = []
    for index in range(3):
        weight = (inside & (segment == index)).unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * weight).sum(1) / weight.sum(1).clamp(min=1.0)
        means.append(torch.nn.functional.normalize(mean, dim=-1))
    query, first, second = means
    return torch.stack([(query * first).sum(-1), (query * second).sum(-1),
                        (first * second).sum(-1)], dim=-1)


@lru_cache(maxsize=1)
def model_classes():
    """(config class, model class), registered with transformers' Auto classes."""
    import torch
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        BertConfig,
        BertModel,
        BertPreTrainedModel,
    )
    from transformers.modeling_outputs import SequenceClassifierOutput

    class SegmentPairConfig(BertConfig):
        model_type = MODEL_TYPE

        def __init__(self, sep_token_id: int = 102, **kwargs) -> None:
            super().__init__(**kwargs)
            self.sep_token_id = sep_token_id  # where the segments end (the tokenizer's [SEP])

    class SegmentPairClassifier(BertPreTrainedModel):
        """C(q, d1, d2): one logit from the three segment cosines."""

        config_class = SegmentPairConfig

        def __init__(self, config) -> None:
            config.num_labels = 1
            super().__init__(config)
            self.bert = BertModel(config, add_pooling_layer=False)
            self.head = torch.nn.Linear(len(FEATURES), 1)
            self.post_init()

        def start_from_cosines(self, cosine_sum: float = 1.0) -> None:
            """The head as "both documents match the question", the bi-encoder's view:
            P = 0.5 where cos(q, d1) + cos(q, d2) = `cosine_sum`."""
            with torch.no_grad():
                self.head.weight.copy_(torch.tensor([[INITIAL_SCALE, INITIAL_SCALE, 0.0]]))
                self.head.bias.fill_(-INITIAL_SCALE * cosine_sum)

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                    labels=None, **kwargs):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            features = segment_cosines(hidden, input_ids, attention_mask,
                                       self.config.sep_token_id)
            logits = self.head(features)
            loss = None
            if labels is not None:
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    logits.squeeze(-1), labels.float())
            return SequenceClassifierOutput(loss=loss, logits=logits)

    AutoConfig.register(MODEL_TYPE, SegmentPairConfig, exist_ok=True)
    AutoModelForSequenceClassification.register(SegmentPairConfig, SegmentPairClassifier,
                                                exist_ok=True)
    return SegmentPairConfig, SegmentPairClassifier


def new_pair_model(base_model: str = "minilm", cosine_sum: float = 1.0):
    """(tokenizer, model): the pair classifier's encoder from `base_model` (alias, folder
    or hub id), its head set to "both documents match the question" (untrained; P = 0.5
    where the two cosines sum to `cosine_sum`)."""
    from transformers import AutoConfig, AutoTokenizer

    from engine.models.locations import resolve
    from engine.models.pretrained import from_pretrained

    location = resolve(base_model)
    tokenizer = from_pretrained(AutoTokenizer.from_pretrained, location, local_files_only=True)
    config_class, model_class = model_classes()
    base = from_pretrained(AutoConfig.from_pretrained, location, local_files_only=True)
    config = config_class(**{**base.to_dict(), "sep_token_id": tokenizer.sep_token_id})
    # transformers reports the head (set below) as missing from the encoder's weights and
    # the encoder's pooler as unused, both expected: from_pretrained keeps its load report
    # out of the log (raising its logger's level here instead made it log tensor-parallel
    # notes, "The following layers were not sharded", and raced with other loads)
    model = from_pretrained(model_class.from_pretrained, location, config=config,
                            local_files_only=True)
    model.start_from_cosines(cosine_sum)
    model.eval()
    return tokenizer, model
