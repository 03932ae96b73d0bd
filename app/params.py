"""Parameter panels built from the paradigms' declared options, and their config JSON.

Every registered paradigm gets one panel; its widgets come from its config's fields
(engine.config.param: type, range, choices, help), so a new paradigm or option needs no UI
code. Widget values go back to the engine as the paradigm's JSON config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import gradio as gr

from engine import allowed
from engine.config import Option
from engine.paradigms.registry import PARADIGMS


@dataclass
class ParamPanels:
    """One accordion of widgets per paradigm; `inputs()` lists every widget in order."""

    groups: dict[str, gr.Accordion] = field(default_factory=dict)
    widgets: list[tuple[str, str, gr.Component]] = field(default_factory=list)

    def inputs(self) -> list[gr.Component]:
        return [w for _, _, w in self.widgets]

    def keys(self) -> list[tuple[str, str]]:
        """(paradigm, dotted option name) of every widget, in `inputs()` order."""
        return [(p, n) for p, n, _ in self.widgets]


def label_of(name: str) -> str:
    """A dotted option name as a widget label: "reader.max_new_tokens" reads "reader: max
    new tokens"; the papers' one-letter symbols (K, N, H, M) stay as they are."""
    return ": ".join(part.replace("_", " ") for part in name.split("."))


def widget(option: Option, elem_id: str, value: object = None) -> gr.Component:
    """The input widget for one declared option, showing `value` (None: its default)."""
    label, info = label_of(option.name), option.help
    option = replace(option, default=value) if value is not None else option
    if option.choices:
        return gr.Dropdown(list(option.choices), value=option.default, label=label, info=info,
                           elem_id=elem_id)
    named = allowed.current().names(option.names) if option.names else ()
    if option.names == "endpoints":  # a request picks one the operator allowed, or none
        return gr.Dropdown([("none: the model in this process", ""), *named],
                           value=option.default if option.default in named else "",
                           label=label, info=info, elem_id=elem_id)
    if named:
        info = f"{info}; allowed here by name: {', '.join(named)}"
    if option.type is bool:
        return gr.Checkbox(value=option.default, label=label, info=info, elem_id=elem_id)
    if option.type in (int, float):
        # a number box with the range in its help, and no minimum/maximum: a slider's box
        # clamps a typed value silently (K = -3 ran as K = 1) and Gradio's own check fails
        # every output at once; the engine's check refuses the value by name and range
        # ("K=-3 is out of range; allowed: 1 to 200"), as the API does
        if option.low is not None and option.high is not None:
            info = f"{info} ({option.low:g} to {option.high:g})"
        return gr.Number(value=option.default, label=label, info=info, elem_id=elem_id,
                         precision=0 if option.type is int else None)
    return gr.Textbox(value=option.default, label=label, info=info, elem_id=elem_id)


def param_panels(prefix: str, visible: set[str] | None = None,
                 defaults: dict[str, object] | None = None) -> ParamPanels:
    """An accordion of options per registered paradigm (only `visible` ones shown); an
    option named in `defaults` starts at that value instead of its own default (the
    Evaluate tab's reader reads without attention, as evaluations do by default)."""
    panels = ParamPanels()
    for name, spec in PARADIGMS.items():
        shown = visible is None or name in visible
        with gr.Accordion(f"{spec.label}: options", open=False, visible=shown,
                          elem_id=f"{prefix}-params-{name}") as group:
            for option in spec.options():
                panels.widgets.append((name, option.name, widget(
                    option, f"{prefix}-{name}-{option.name.replace('.', '-')}",
                    (defaults or {}).get(option.name))))
        panels.groups[name] = group
    return panels


def config_json(paradigm: str, keys: list[tuple[str, str]], values: list) -> str:
    """The JSON config of `paradigm` from the widget values (only its own options; ints
    from sliders and number boxes stay ints)."""
    options = {o.name: o for o in PARADIGMS[paradigm].options()}
    config: dict = {}
    for (owner, name), value in zip(keys, values, strict=True):
        if owner != paradigm or name not in options:
            continue
        if options[name].type is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        *path, last = name.split(".")
        node = config
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return json.dumps(config)


def show_panels(panels: ParamPanels, chosen: str | list[str]) -> list:
    """Visibility updates: the chosen paradigms' panels shown, the others hidden."""
    chosen = {chosen} if isinstance(chosen, str) else set(chosen or ())
    return [gr.update(visible=name in chosen) for name in panels.groups]


def panel_values(panels: ParamPanels, configs: dict[str, dict]) -> list:
    """Updates of every widget (in `inputs()` order) to the option's value in its
    paradigm's config of `configs` (a stored evaluation's); a widget whose paradigm or
    option is not there is left as it is."""
    updates = []
    for paradigm, name, _ in panels.widgets:
        node = configs.get(paradigm)
        for part in name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        updates.append(gr.skip() if node is None else gr.update(value=node))
    return updates
