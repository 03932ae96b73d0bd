"""MkDocs hooks (mkdocs.yml `hooks:`): the pages made from the code itself, at every build.

A page holds a marker `<!-- generated: NAME -->` where the build writes:
- `cli`: `python -m engine --help` and each command's help, walked from
  engine.cli.main.build_parser's subparsers;
- `app-flags`: `python app.py --help` as it prints (the app builds its parser in main);
- `gradio-api`: every named endpoint of the app's Blocks, from `Blocks.get_api_info()` (what
  gradio_client's view_api reads), the app built over a corpus never loaded and not launched.

plugins.md renders `::: engine.api`; the build fails if a name of engine.api.__all__ has no
entry there, so a name added to the plugin API cannot be left out of its page.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

log = logging.getLogger("mkdocs.hooks.funnel")
MARKER = re.compile(r"<!-- generated: ([\w-]+) -->")
WIDTH = 100  # columns of the help texts, whatever terminal builds the docs


def on_startup(command, dirty) -> None:
    """This checkout's engine and app, first on the path (MkDocs loads this file with its
    own folder on the path, and not the project's root)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def on_page_markdown(markdown: str, page, config, files) -> str:
    return MARKER.sub(lambda found: generated(found.group(1), page.file.src_uri), markdown)


def on_page_content(html: str, page, config, files) -> str:
    if page.file.src_uri == "plugins.md":
        missing = missing_api_names(html)
        if missing:
            raise ValueError(f"plugins.md has no entry for engine.api names {missing}: "
                             "add them to its ::: engine.api members (or its prose)")
    return html


def generated(name: str, where: str) -> str:
    makers = {"cli": cli_markdown, "app-flags": app_flags_markdown,
              "gradio-api": gradio_api_markdown}
    if name not in makers:
        raise ValueError(f"{where}: no generated page part {name!r}; known: {sorted(makers)}")
    return makers[name]()


def missing_api_names(html: str) -> list[str]:
    """engine.api's names that have no rendered entry (an element id `engine.api.NAME`)."""
    import engine.api

    return [name for name in engine.api.__all__ if f'id="engine.api.{name}"' not in html]


# --- the CLI --------------------------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser) for `parser` and every subparser under it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                yield from subcommands(sub, (*path, word))


def help_text(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
    return parser.format_help().rstrip()


def cli_markdown() -> str:
    from engine.cli.main import build_parser

    parts = []
    for path, parser in subcommands(build_parser()):
        title = " ".join(("python -m engine", *path))
        parts.append(f"### `{title}`\n\n```text\n{help_text(parser)}\n```\n")
    return "\n".join(parts)


def app_flags_markdown() -> str:
    env = {**os.environ, "COLUMNS": str(WIDTH)}
    done = subprocess.run([sys.executable, str(ROOT / "app.py"), "--help"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"python app.py --help failed: {done.stderr[-2000:]}")
    return f"```text\n{done.stdout.rstrip()}\n```\n"


# --- the Gradio API -------------------------------------------------------------------------


def api_info() -> dict:
    """The app's API description as gradio_client's view_api reads it, from the Blocks built
    over an Explorer whose corpus is never loaded (a throwaway data directory)."""
    before = os.environ.get("FUNNEL_DATA_DIR")
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["FUNNEL_DATA_DIR"] = scratch
        from app.ui import build_app
        from engine.service.explorer import Explorer
        from engine.service.preparation import Preparation
        from engine.store.sessions import SessionStore

        store = SessionStore(Path(scratch) / "sessions.duckdb")
        try:
            demo = build_app(Explorer(Preparation("wiki", dense=False, train=False), store))
            return demo.get_api_info()
        finally:
            store.close()
            if before is None:
                os.environ.pop("FUNNEL_DATA_DIR", None)
            else:
                os.environ["FUNNEL_DATA_DIR"] = before


def _type(part: dict) -> str:
    return part.get("python_type", {}).get("type", "?")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def gradio_api_markdown() -> str:
    info = api_info()
    if info["unnamed_endpoints"]:
        raise ValueError(f"unnamed API endpoints: {sorted(info['unnamed_endpoints'])}")
    parts = []
    for name, endpoint in info["named_endpoints"].items():
        params = endpoint["parameters"]
        args = [p["parameter_name"] for p in params]
        (result,) = endpoint["returns"]
        call = ", ".join([*args, f'api_name="{name}"'])
        lines = [f"### `{name}`", "", _one_line(endpoint.get("description", "")), "",
                 "```python", f"{result['label']} = client.predict({call})", "```", ""]
        for p in params:
            default = (f", default `{p['parameter_default']!r}`" if p["parameter_has_default"]
                       else ", required")
            about = _one_line(p.get("python_type", {}).get("description", ""))
            lines.append(f"- `{p['parameter_name']}` ({_type(p)}{default})"
                         + (f": {about}" if about else ""))
        about = _one_line(result.get("python_type", {}).get("description", ""))
        lines.append(f"- returns `{result['label']}` ({_type(result)}): {about}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
