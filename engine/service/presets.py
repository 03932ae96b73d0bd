"""Named presets as the app, the API and the command line see them: saved from a paradigm
and its settings (checked as a run would check them), listed, run by name (a run's
`preset`, engine.service.runs), removed, exported as JSON and imported again.

`Presets` is a facade beside Explorer (`explorer.presets`): each public method is checked
against the roles' table (engine.service.door). Anyone may list and export them and run one;
an annotator saves their own; only its owner or an admin removes or replaces one; an admin
imports them.
"""

from __future__ import annotations

from engine.errors import ConfigError
from engine.paradigms.registry import make_config, parse_config, spec
from engine.service.door import Door, guarded
from engine.store.presets import Preset, PresetStore, read_presets
from engine.store.sessions import SessionStore


@guarded
class Presets:
    """The presets of one sessions database."""

    def __init__(self, store: SessionStore, door: Door | None = None) -> None:
        self.store = PresetStore(store)
        self.door = door or Door()

    def list_presets(self) -> list[Preset]:
        """Every preset, by name."""
        return self.store.list()

    def save_preset(self, name: str, paradigm: str, config: str | dict = "", *,
                    source: str = "typed", notes: str = "", replace: bool = False,
                    corpus: str = "") -> Preset:
        """Save paradigm `paradigm` with `config` (JSON text or a dict of options) as
        preset `name`, the acting user's, made over `corpus` (a run of it searches that
        corpus unless it names another; "": the one the run names); a name taken is
        replaced only with `replace`, by its owner or an admin."""
        preset = checked(Preset(name, paradigm, _options(config), source, notes,
                                self.door.name(), corpus=(corpus or "").strip()))
        before = self.store.find(name)
        if before is not None and replace:
            self.door.owns(before.owner, "save_preset", f"preset {name!r}")
        return self.store.save(preset, replace)

    def remove_preset(self, name: str) -> None:
        """Remove preset `name`: one's own, or anyone's as an admin."""
        self.door.owns(self.store.get(name).owner, "remove_preset", f"preset {name!r}")
        self.store.remove(name)

    def export_presets(self, names: list[str] | None = None) -> str:
        """The presets (all, or `names`) as a JSON list, as `import_presets` reads it."""
        return self.store.export_json(names)

    def import_presets(self, text: str, filename: str = "presets.json") -> tuple[int, int]:
        """(added, already stored) from an export; each checked as a run would check it,
        any bad one refusing the whole file before anything is stored."""
        found = [checked(p, filename) for p in read_presets(text, filename)]
        stored = {p.name for p in self.store.list()}
        fresh = [p for p in found if p.name not in stored]
        for preset in fresh:
            self.store.save(Preset(preset.name, preset.paradigm, preset.config,
                                   preset.source, preset.notes, self.door.name(),
                                   corpus=preset.corpus))
        return len(fresh), len(found) - len(fresh)


def checked(preset: Preset, where: str = "") -> Preset:
    """`preset` once its paradigm is known and its options make a config (the checks of a
    run: an unknown option or an out-of-range value is refused by name)."""
    try:
        spec(preset.paradigm)
        make_config(preset.paradigm, preset.config)
    except ConfigError as err:
        raise ConfigError(f"{where + ': ' if where else ''}preset {preset.name!r}: {err}"
                          ) from None
    return preset


def _options(config: str | dict) -> dict:
    return dict(config) if isinstance(config, dict) else parse_config(config)
