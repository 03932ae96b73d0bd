"""`python -m engine presets ...`: named presets (engine.store.presets) in the sessions
database the app reads: list them, save one from a paradigm and its options, remove one,
export them as JSON and import them again. `ask --preset NAME` runs one."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.errors import ConfigError


def add_parser(sub) -> None:
    presets = sub.add_parser("presets", help="named presets: a paradigm with its settings")
    presets.add_argument("--db", default="", help="the sessions file (default: "
                         "sessions.duckdb in the data directory)")
    steps = presets.add_subparsers(dest="step", required=True)
    steps.add_parser("list", help="every preset: name, paradigm, options")
    save = steps.add_parser("save", help="save a paradigm with its options under a name")
    save.add_argument("name")
    save.add_argument("--paradigm", required=True)
    save.add_argument("--config", default="{}", help="its options as JSON, e.g. '{\"K\": 2}'")
    save.add_argument("--notes", default="")
    save.add_argument("--replace", action="store_true", help="replace a preset of that name")
    remove = steps.add_parser("remove", help="remove a preset")
    remove.add_argument("name")
    export = steps.add_parser("export", help="print presets as JSON (all, or those named)")
    export.add_argument("names", nargs="*")
    imported = steps.add_parser("import", help="add the presets of an export not stored yet")
    imported.add_argument("file")


def presets(args: argparse.Namespace) -> int:
    from engine.data.loaders.jsonio import read_text
    from engine.service.presets import Presets
    from engine.store.sessions import SessionStore

    store = SessionStore(args.db or None)
    try:
        found = Presets(store)
        if args.step == "list":
            for preset in found.list_presets():
                print(f"{preset.name}\t{preset.paradigm}\t{json.dumps(preset.config)}\t"
                      f"{preset.source}")
        elif args.step == "save":
            saved = found.save_preset(args.name, args.paradigm, args.config,
                                      source="command line", notes=args.notes,
                                      replace=args.replace)
            print(f"preset {saved.name} saved: {saved.paradigm} {json.dumps(saved.config)}")
        elif args.step == "remove":
            found.remove_preset(args.name)
            print(f"preset {args.name} removed")
        elif args.step == "export":
            sys.stdout.write(found.export_presets(args.names or None) + "\n")
        else:
            added, already = found.import_presets(read_text(Path(args.file)),
                                                  Path(args.file).name)
            print(f"imported {added} presets from {args.file}; {already} were already stored")
    finally:
        store.close()
    return 0


def chosen(paradigm: str, options: dict, preset: str = "", db: str = "") -> tuple[str, dict]:
    """(paradigm, options) a run takes: `paradigm` with `options`, or with `preset`, that
    preset's (in the sessions file `db`, default the data directory's) with `options`
    over its own; for `ask --preset`."""
    if not preset:
        return paradigm, options
    from engine.store.presets import PresetStore
    from engine.store.sessions import SessionStore

    store = SessionStore(db or None)
    try:
        found = PresetStore(store).get(preset)
    finally:
        store.close()
    return found.paradigm, {**found.config, **options}


def evaluated(paradigms: str, presets: str, given: dict, db: str = ""
              ) -> tuple[list[str], dict[str, dict], dict[str, str]]:
    """(labels, {label: options}, {preset label: its paradigm}) of `eval`: the comma-separated
    `paradigms` (all, when neither they nor `presets` are given), then each preset under its
    name; `given` ({label: options}, --config) over each one's own, every reader's attention
    off (an evaluation shows no heatmap)."""
    from engine.paradigms.registry import names, unattended

    named = [p.strip() for p in paradigms.split(",") if p.strip()]
    wanted = [p.strip() for p in presets.split(",") if p.strip()]
    named = named or ([] if wanted else list(names()))
    kinds, configs = {}, {}
    for label in named:
        configs[label] = unattended(label, given.get(label))
    for label in wanted:
        if label in configs:
            raise ConfigError(f"--preset {label!r} is named like a paradigm given too: "
                              "rename the preset.")
        kinds[label], options = chosen("", given.get(label) or {}, label, db)
        configs[label] = unattended(kinds[label], options)
    return [*named, *wanted], configs, kinds
