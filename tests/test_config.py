"""Declared options: types, ranges and choices checked from the declaration, nested configs,
and the messages a user gets for a wrong value."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from engine.config import check_config, config_from_dict, config_to_dict, describe, param
from engine.errors import ConfigError
from engine.paradigms.best import BestConfig
from engine.paradigms.drrag import DRRAGConfig
from engine.paradigms.flat import FlatConfig
from engine.paradigms.funnel import FunnelConfig
from engine.paradigms.longrag import LongRAGConfig
from engine.paradigms.options import check_kept


@dataclass(frozen=True)
class Inner:
    lr: int = param(4, "representative tokens", low=1, high=64)
    alpha: float = param(0.3, "weight", low=0.0, high=1.0)


@dataclass(frozen=True)
class Outer:
    K: int = param(10, "clusters", low=1, high=200)
    name: str = param("bm25", "retriever", choices=("bm25", "dense"))
    exact: bool = param(False, "exact search")
    inner: Inner = param(Inner(), "nested options")

    def __post_init__(self) -> None:
        check_config(self)


@pytest.mark.parametrize(("values", "message"), [
    ({"K": "ten"}, "Option 'K' must be an integer, got 'ten' (str)."),
    ({"K": 2.5}, "Option 'K' must be an integer, got 2.5 (float)."),
    ({"K": True}, "Option 'K' must be an integer, got True (bool)."),
    ({"K": 0}, "K=0 is out of range; allowed: 1 to 200."),
    ({"name": "sparse"}, "Unknown name 'sparse'. Choose from: bm25, dense."),
    ({"exact": "yes"}, "Option 'exact' must be true or false, got 'yes' (str)."),
    ({"inner": {"lr": "x"}}, "Option 'lr' must be an integer, got 'x' (str)."),
    ({"inner": {"alpha": 1.5}}, "alpha=1.5 is out of range; allowed: 0.0 to 1.0."),
    ({"inner": 3}, "Option 'inner' must be an object of Inner options, got 3."),
    ({"Q": 1}, "Unknown option(s) Q for Outer. Valid options: K, exact, inner, name."),
])
def test_wrong_values_name_the_field_the_value_and_what_is_expected(values, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        config_from_dict(Outer, values)


def test_json_numbers_and_nesting_are_read_as_declared():
    config = config_from_dict(Outer, {"K": 20, "inner": {"alpha": 1}})
    assert config == Outer(K=20, inner=Inner(alpha=1.0))
    assert isinstance(config.inner.alpha, float)
    assert config_from_dict(Outer, config_to_dict(config)) == config


def test_describe_flattens_nested_options_with_their_limits():
    options = {o.name: o for o in describe(Outer)}
    assert list(options) == ["K", "name", "exact", "inner.lr", "inner.alpha"]
    assert (options["K"].low, options["K"].high, options["K"].default) == (1, 200, 10)
    assert options["name"].choices == ("bm25", "dense") and options["exact"].type is bool
    assert options["inner.lr"].help == "representative tokens"


def test_paradigm_configs_check_their_cross_field_rules():
    with pytest.raises(ConfigError, match="k=5 is more than M=3"):
        FlatConfig(M=3, k=5)
    remote = {"endpoint": "http://127.0.0.1:1/v1"}
    # by what the backend can do, not by "is an endpoint set": post-ranking reads attention
    with pytest.raises(ConfigError, match="attention, which the 'openai' backend cannot give"):
        config_from_dict(FunnelConfig, {"attention_weight": 0.5, "reader": remote})
    assert config_from_dict(FunnelConfig, {"attention_weight": 0.0, "reader": remote})
    with pytest.raises(ConfigError, match="Unknown prompt 'poem'"):
        config_from_dict(FlatConfig, {"reader": {"prompt": "poem"}})


def test_options_the_paradigms_share_have_one_default_and_range():
    """The encoder, passage sizes and hybrid weight come from engine.paradigms.options: every
    paradigm's form offers the same default and range for each."""
    shared = {"bi_encoder": "bi_encoder", "passage_tokens": "passage_tokens",
              "index_passage_tokens": "passage_tokens", "hybrid_weight": "hybrid_weight"}
    seen: dict[str, set] = {}
    for cls in (FlatConfig, FunnelConfig, LongRAGConfig, DRRAGConfig, BestConfig):
        for option in describe(cls):
            if option.name in shared:
                seen.setdefault(shared[option.name], set()).add(
                    (option.default, option.low, option.high))
    assert seen == {"bi_encoder": {("minilm", None, None)},
                    "passage_tokens": {(100, 16, 1000)}, "hybrid_weight": {(0.7, 0.0, 1.0)}}


def test_a_kept_count_above_the_found_count_names_both_and_the_fix():
    @dataclass(frozen=True)
    class Counts:
        k: int = 5
        M: int = 3

    with pytest.raises(ConfigError) as err:
        check_kept(Counts(), "k", "M", "the re-ranker cannot keep more than retrieval found")
    assert str(err.value) == ("k=5 is more than M=3: the re-ranker cannot keep more than "
                              "retrieval found. Lower k or raise M.")
    check_kept(Counts(k=3), "k", "M", "as many as found is fine")


@pytest.mark.parametrize(("text", "message"), [
    ("{K: 3", r"^--config is not valid JSON \(Expecting property name .* at line 1, column 2\): "
              r"write e\.g\. \{\"K\": 10\}\.$"),
    ("[1, 2]", r"^--config must be a JSON object such as \{\"K\": 10\}, not list: '\[1, 2\]'\.$"),
    ("1" * 10_001, r"^--config is 10,001 characters; the limit is 10,000\.$"),
])
def test_typed_json_is_read_by_one_reader_that_names_the_field(text, message):
    """The command line, the API and the tabs read a typed JSON object through one
    function: the same message, naming the flag, box or argument, for the same mistake."""
    from engine.cli.run import json_arg
    from engine.config import json_object

    with pytest.raises(ConfigError, match=message):
        json_arg(text)
    with pytest.raises(ConfigError, match=message.replace("--config", "Options to search")):
        json_object(text, "Options to search")
    assert json_object("  ", "--config") is None and json_arg(" ") == {}
    assert json_object('{"K": 3}', "--config") == {"K": 3}
