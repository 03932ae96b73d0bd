"""The code's shape, for the "one of each" measurements (issue 36): the largest functions of
engine/ and app/ (lines from `def` to the last line of the body, nested functions counted
in their own right and in their parent), and how many modules each package has.

    python bench/code_shape.py [--root DIR] [--most 10]

Run it on two checkouts (a commit before a refactor and after) to compare.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path


def functions(root: Path) -> list[tuple[int, str]]:
    """(lines, "path:name") of every function and method under engine/ and app/."""
    found = []
    for path in sorted([*root.glob("engine/**/*.py"), *root.glob("app/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                found.append((lines, f"{path.relative_to(root)}:{node.name}"))
    return sorted(found, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--most", type=int, default=10)
    args = parser.parse_args()
    found = functions(args.root)
    print(f"{len(found)} functions; over 50 lines: {sum(n > 50 for n, _ in found)}; "
          f"over 80: {sum(n > 80 for n, _ in found)}")
    for lines, name in found[:args.most]:
        print(f"{lines:5d}  {name}")
    packages = Counter(p.parent.relative_to(args.root).as_posix()
                       for p in [*args.root.glob("engine/**/*.py"), *args.root.glob("app/**/*.py")]
                       if p.name != "__init__.py")
    print("modules per package: " + ", ".join(f"{k} {v}" for k, v in sorted(packages.items())))


if __name__ == "__main__":
    main()
