"""The layers written in pyproject.toml ([tool.importlinter]) hold, and irglow has no import cycle — both counting
imports written inside functions (grimp reads every import statement), so neither can hide behind a deferred
import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def import_cycles(package: str = "irglow") -> list[list[str]]:
    """Strongly connected components of more than one module in ``package``'s import graph."""
    import grimp

    graph = grimp.build_graph(package, cache_dir=None)
    modules = sorted(graph.modules)
    index, low, stack, on, cycles, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    return cycles


def test_no_import_cycle_counting_imports_inside_functions():
    cycles = import_cycles()
    print(f"import cycles in irglow: {len(cycles)}")
    assert cycles == []


def test_the_cycle_finder_finds_a_cycle_written_inside_a_function(tmp_path, monkeypatch):
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import cyc.b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyc") == [["cyc.a", "cyc.b"]]


def test_the_layer_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 kept, 0 broken" in out.stdout
