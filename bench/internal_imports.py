"""How many of irglow's internal import statements are written inside functions (issue 68.7: at most 20 %, where
no cycle or heavy optional dependency asks for it).  The ruler is the statement, as written: ``from irglow.x import
a, b`` inside a function is one; ``import irglow.x`` one; at module level (``if`` and ``try`` blocks included) not.
``importlib.import_module(...)`` counts as one too, whatever it names (a command's lazy handler, a plugin): the
ruler may count too much, never too little.

    python bench/internal_imports.py [--top 20]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def internal(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        return "import_module" in (getattr(node.func, "attr", None), getattr(node.func, "id", None))
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] == "irglow"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "irglow" for a in node.names)


def count(package: Path) -> tuple[int, int, dict[str, int]]:
    """(statements at module level, inside functions, {file: inside functions})."""
    top = inside = 0
    per_file: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        def walk(node: ast.AST, in_function: bool) -> None:
            nonlocal top, inside
            for child in ast.iter_child_nodes(node):
                if internal(child):
                    if in_function:
                        inside += 1
                        per_file[str(path.relative_to(ROOT))] = per_file.get(str(path.relative_to(ROOT)), 0) + 1
                    else:
                        top += 1
                walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return top, inside, per_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=15, help="files with the most, listed")
    args = ap.parse_args()
    top, inside, per_file = count(ROOT / "irglow")
    for name, n in sorted(per_file.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{n:4d}  {name}")
    print(f"internal import statements: {top + inside}; inside functions: {inside} ({inside / (top + inside):.0%})")


if __name__ == "__main__":
    main()
