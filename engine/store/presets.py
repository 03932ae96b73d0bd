"""Named presets in the sessions database: a paradigm with its settings, saved under a name
and run by it (Explore, the API, `funnel-engine ask --preset NAME`), exported as JSON and
imported again.

A preset holds the paradigm, its options as the config JSON a run takes (only what differs
from the defaults is needed), where it came from (`source`: "tune 3", "typed", an imported
file) and notes. Its name is 1-40 letters, digits, '-', '_' or '.'. Saving a name again
replaces it only when asked to; an import adds the presets not yet stored and leaves stored
ones alone, and a file with any bad entry is refused whole, naming the entry and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.errors import ConfigError, DataFormatError
from engine.store.sessions import SessionStore

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
MAX_NOTES_CHARS = 2_000
FIELDS = ("name", "paradigm", "config", "source", "notes", "owner", "corpus")


@dataclass(frozen=True)
class Preset:
    name: str
    paradigm: str
    config: dict
    source: str = ""
    notes: str = ""
    owner: str = ""  # the user who saved it ("" without logins)
    created: str = ""
    corpus: str = ""  # the corpus it was made over (a search's, or the one picked); "": any

    def __post_init__(self) -> None:
        if not NAME.match(str(self.name or "")):
            raise ConfigError(f"Preset name {self.name!r} is not usable: 1-40 letters, digits, "
                              "'.', '_' or '-', starting with a letter or digit.")
        if not isinstance(self.config, dict):
            raise ConfigError(f"Preset {self.name!r}: its config must be a JSON object of "
                              f"options, not {type(self.config).__name__}.")
        if len(self.notes or "") > MAX_NOTES_CHARS:
            raise ConfigError(f"Preset {self.name!r}: the notes have {len(self.notes):,} "
                              f"characters; the limit is {MAX_NOTES_CHARS:,}.")

    def record(self) -> dict:
        """The preset as an export writes it (and an import reads it)."""
        return {k: v for k, v in asdict(self).items() if k != "owner"}


class PresetStore:
    """The presets table of a `SessionStore`'s database."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def save(self, preset: Preset, replace: bool = False) -> Preset:
        """Store `preset`; a name stored already is refused unless `replace`."""
        if not replace and self.find(preset.name) is not None:
            raise ConfigError(f"A preset named {preset.name!r} exists already: pick another "
                              "name, or replace it on purpose.")
        values = [preset.name, preset.paradigm, json.dumps(preset.config), preset.source,
                  preset.notes, preset.owner, preset.corpus]
        self.store.execute(
            f"INSERT INTO presets ({', '.join(FIELDS)}) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET paradigm = excluded.paradigm, "
            "config = excluded.config, source = excluded.source, notes = excluded.notes, "
            "owner = excluded.owner, corpus = excluded.corpus, created = now()", values)
        return self.get(preset.name)

    def find(self, name: str) -> Preset | None:
        rows = self.store.execute(
            f"SELECT {', '.join(FIELDS)}, strftime(created, '%Y-%m-%d %H:%M:%S') FROM presets "
            "WHERE name = ?", [str(name)])
        return _preset(rows[0]) if rows else None

    def get(self, name: str) -> Preset:
        found = self.find(name)
        if found is None:
            names = ", ".join(p.name for p in self.list()) or "none yet"
            raise ConfigError(f"No preset named {name!r}; saved presets: {names}.")
        return found

    def list(self) -> list[Preset]:
        """Every preset, by name."""
        rows = self.store.execute(
            f"SELECT {', '.join(FIELDS)}, strftime(created, '%Y-%m-%d %H:%M:%S') FROM presets "
            "ORDER BY name")
        return [_preset(row) for row in rows]

    def remove(self, name: str) -> None:
        if not self.store.execute("DELETE FROM presets WHERE name = ? RETURNING name",
                                  [str(name)]):
            self.get(name)  # names the presets there are

    def export_json(self, names: list[str] | None = None) -> str:
        """The presets (all, or `names`) as a JSON list, as `import_json` reads it."""
        chosen = [self.get(n) for n in names] if names else self.list()
        return json.dumps([p.record() for p in chosen], indent=1, ensure_ascii=False)


def read_presets(text: str, filename: str = "presets.json") -> list[Preset]:
    """Presets from an export's JSON text; the first bad entry raises, naming it and the
    field."""
    path = Path(filename)
    try:
        found = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(path, f"not JSON ({err.msg})", line=err.lineno,
                              fix="a JSON list of presets, as an export writes") from None
    if isinstance(found, dict):
        found = [found]
    if not isinstance(found, list):
        raise DataFormatError(path, "expected a JSON list of presets")
    presets = []
    for n, entry in enumerate(found, start=1):
        where = f"entry {n}"
        if not isinstance(entry, dict):
            raise DataFormatError(path, f"{where}: expected a JSON object")
        for field in ("name", "paradigm", "config"):
            if field not in entry:
                raise DataFormatError(path, f"{where}: missing", field=field,
                                      fix="every preset needs name, paradigm and config")
        try:
            presets.append(Preset(str(entry["name"]), str(entry["paradigm"]),
                                  entry["config"], str(entry.get("source") or filename),
                                  str(entry.get("notes") or ""),
                                  corpus=str(entry.get("corpus") or "")))
        except ConfigError as err:
            raise DataFormatError(path, f"{where}: {err}") from None
    return presets


def _preset(row: tuple) -> Preset:
    name, paradigm, config, source, notes, owner, corpus, created = row
    return Preset(name, paradigm, json.loads(config), source, notes, owner, created, corpus)
