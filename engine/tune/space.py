"""What a tuning search varies: some of each paradigm's declared options, each a dimension.

By default a paradigm's dimensions are its numeric options (over their declared range) and
its options with declared choices (booleans too), except:
- options whose other values need something else built over the corpus (an index of
  other passages, other clusters, another dense encoder's vectors): a trial would wait for
  a build; name them to search them anyway;
- options no other value of which runs beside the other defaults (funnel's later passage
  size must equal the index's while the post-ranker reads the index's vectors);
- the reader's options when the measure stops before the reader (recall, nDCG: they cannot
  change it), and the sentence cut's then (it saves the reader time, and can only lower a
  retrieval measure), those that bring the LLM into retrieval then (`READS_EARLY`), and the two a
  run shows rather than finds with (`DIAGNOSTIC`);
- free-text options (a re-ranker, an encoder or a reader model by name): their values are
  whatever models a user has, so the user names them, e.g.
  {"flat.reranker": ["bi-encoder", "cross-encoder"]}.

A chosen dimension is written "paradigm.option": null for its declared range or choices,
[low, high] to narrow a numeric one, a list of values for one with choices or free text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.config import Option
from engine.errors import ConfigError
from engine.plugins import registered_names

# the measures a search can maximise: those stopping before the reader need no reader
RETRIEVAL_MEASURES = ("AR@1", "AR@2", "AR@3", "AR@4", "gold_doc_recall", "nDCG@10", "MRR",
                      "MAP")
READER_MEASURES = ("EM", "F1")
MEASURES = READER_MEASURES + RETRIEVAL_MEASURES
# what it costs, minimised: median seconds per question, or mean reader input tokens
COSTS = ("seconds", "reader_tokens")
# options that change what a run shows (the heatmap, the reader ablation), not what it finds
DIAGNOSTIC = ("reader.attention", "reader.ablation")
# options that bring the LLM into retrieval (funnel's attention post-ranking above 0, best's
# HyDE): a search for a retrieval measure leaves them out unless named. Above 0 a float
# weight is on with probability 1, so every funnel trial would read with the LLM, at the
# reader's seconds a question where retrieval takes milliseconds (measured:
# docs/benchmarks/diagnosis.md, "Tuning against the defaults and an equal-budget grid")
READS_EARLY = ("funnel.attention_weight", "best.hyde")
# searched only when the measure reads the answer: the reader's, and the sentence cut's (it
# saves the reader time; a retrieval measure it can only lower)
READER_ONLY = ("reader.", "prune.")
# a numeric range this wide is searched on a log scale (K from 1 to 200: 1-16 matters most)
LOG_RATIO = 16


@dataclass(frozen=True)
class Dimension:
    """One option of one paradigm, searched over a range or a list of values."""

    paradigm: str
    option: str  # dotted: "reader.lr"
    kind: str  # "int", "float" or "choice"
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    @property
    def name(self) -> str:
        """The trial parameter's name: "funnel.K"."""
        return f"{self.paradigm}.{self.option}"

    @property
    def log(self) -> bool:
        return self.kind != "choice" and self.low > 0 and self.high / self.low >= LOG_RATIO

    def distribution(self) -> Any:
        """Optuna's distribution of this dimension."""
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        if self.kind == "choice":
            return CategoricalDistribution(self.choices)
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        return FloatDistribution(float(self.low), float(self.high), log=self.log)

    def describe(self) -> str:
        """"K: 1 to 200, log scale" or "retriever: dense | bm25"."""
        if self.kind == "choice":
            return f"{self.option}: " + " | ".join(map(str, self.choices))
        return f"{self.option}: {self.low:g} to {self.high:g}" + (", log scale"
                                                                   if self.log else "")

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "low": self.low, "high": self.high,
                "choices": list(self.choices), "log": self.log}


def space(paradigms: Sequence[str], chosen: dict | None = None, *,
          reads: bool = True) -> list[Dimension]:
    """The dimensions of a search over `paradigms`: `chosen` ({"funnel.K": None | [low,
    high] | [values]}) where given (only those: a paradigm none names keeps its defaults
    fixed), else each paradigm's default dimensions. `reads`: the measure needs the reader.

    Raises:
        ConfigError: naming an unknown paradigm or option, or a bad range or value.
    """
    from engine.paradigms.registry import spec

    for paradigm in paradigms:
        spec(paradigm)  # an unknown name is refused, naming the paradigms there are
    if not chosen:
        return [d for p in paradigms for d in default_space(p, reads=reads)]
    if not isinstance(chosen, dict):
        raise ConfigError(f"Give the options to search as a JSON object such as "
                          f'{{"funnel.K": [2, 40], "flat.retriever": null}}; got {chosen!r}.')
    out = []
    for name, values in chosen.items():
        paradigm, _, option = str(name).partition(".")
        if paradigm not in paradigms:
            raise ConfigError(f"{name!r}: {paradigm!r} is not one of the paradigms searched "
                              f"({', '.join(paradigms)}); write options as paradigm.option, "
                              "e.g. funnel.K.")
        out.append(dimension(paradigm, option, values))
    return out


def dimension(paradigm: str, option: str, values: Any = None) -> Dimension:
    """`paradigm`'s `option` as a dimension: over its declared range or choices (`values`
    None), a narrower [low, high], or the listed values."""
    declared = {o.name: o for o in _options(paradigm)}
    found = declared.get(option)
    if found is None:
        raise ConfigError(f"{paradigm} has no option {option!r}; its options: "
                          f"{', '.join(declared)}.")
    if found.type in (int, float) and not found.choices:
        low, high = found.low, found.high
        if values is not None:
            if not (isinstance(values, list | tuple) and len(values) == 2
                    and all(_is_number(v) for v in values) and values[0] < values[1]):
                raise ConfigError(f"{paradigm}.{option}: give [low, high] with low below "
                                  f"high, or null for {low:g} to {high:g}; got {values!r}.")
            low, high = values
            if found.low is not None and low < found.low or \
                    found.high is not None and high > found.high:
                raise ConfigError(f"{paradigm}.{option}: [{low:g}, {high:g}] leaves its "
                                  f"allowed range, {found.low:g} to {found.high:g}.")
        if low is None or high is None:
            raise ConfigError(f"{paradigm}.{option} declares no range: give [low, high].")
        return Dimension(paradigm, option, found.type.__name__, found.type(low),
                         found.type(high))
    allowed = found.choices or ((True, False) if found.type is bool else ())
    if values is None:
        if not allowed:
            raise ConfigError(f"{paradigm}.{option} takes any {found.type.__name__} (a model "
                              "name, say): list the values to try, e.g. "
                              f'{{"{paradigm}.{option}": ["{found.default}", "another"]}}.')
        return Dimension(paradigm, option, "choice", choices=tuple(allowed))
    if not isinstance(values, list | tuple) or len(values) < 2:
        raise ConfigError(f"{paradigm}.{option}: list two or more values to try; got "
                          f"{values!r}.")
    for value in values:
        if allowed and value not in allowed or not isinstance(value, found.type):
            raise ConfigError(f"{paradigm}.{option}={value!r} is not a value it takes; "
                              + (f"choose from: {', '.join(map(str, allowed))}." if allowed
                                 else f"give {found.type.__name__} values."))
    return Dimension(paradigm, option, "choice", choices=tuple(dict.fromkeys(values)))


def default_space(paradigm: str, *, reads: bool = True) -> list[Dimension]:
    """`paradigm`'s dimensions when none are named (see the module's docstring)."""
    out = []
    for option in _options(paradigm):
        if option.name in DIAGNOSTIC or not reads and (
                option.name.startswith(READER_ONLY) or f"{paradigm}.{option.name}" in READS_EARLY):
            continue
        numeric = option.type in (int, float) and not option.choices
        if numeric and (option.low is None or option.high is None):
            continue
        if not numeric and not option.choices and option.type is not bool:
            continue  # free text: the user names the values
        if option.name in _left_out(paradigm, registered_names()):
            continue
        out.append(dimension(paradigm, option.name))
    return out


def _options(paradigm: str) -> list[Option]:
    from engine.paradigms.registry import spec

    return list(spec(paradigm).options())


@cache
def _left_out(paradigm: str, registered: frozenset[str] = frozenset()) -> frozenset[str]:
    """`paradigm`'s options a default search leaves out: those some value of which needs
    something built over the corpus (an index, clusters) that its defaults do not, and
    those no other value of which runs beside the other defaults; tried at each end of a
    range, each choice, and a changed free text. Cached by the names registered
    (`registered`: a plugin's retriever or re-ranker changes what the choices need)."""
    from engine.eval.sweep import with_values
    from engine.paradigms.needs import needs_of
    from engine.paradigms.registry import make_config, spec

    paradigm_class = spec(paradigm).paradigm

    def built(config: dict) -> frozenset[str]:
        resources = paradigm_class.resources(make_config(paradigm, config))
        return frozenset(n.key for n in needs_of(resources) if n.per_corpus
                         and not n.combines) if resources else frozenset()

    base, out = built({}), set()
    for option in _options(paradigm):
        if option.choices:
            tried = option.choices
        elif option.type is bool:
            tried = (not option.default,)
        elif option.type in (int, float):
            tried = (option.low, option.high)
        else:
            tried = (f"{option.default}-other",)
        runs = False  # some value other than the default runs beside the other defaults
        for value in tried:
            if value is None or value == option.default:
                continue
            try:
                needs = built(with_values({}, {option.name: value}))
            except ConfigError:
                continue  # refused together with the defaults: says nothing about builds
            runs = True
            if needs - base:
                out.add(option.name)
                break
        if not runs:  # changes only together with another option: name both to search it
            out.add(option.name)
    return frozenset(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)
