"""How far a ranker and a configuration travel through irglow's code (issue 61's structure targets), measured by
running them, not by reading the code.

* **A ranker's path**: from ``Experiment`` to its run file.  The stacks of irglow frames at the three moments the
  ranker is handled — it writes itself into the configuration (``Ranker.configure``), its stage's settings class binds
  its section (``from_config``), its run file is written (``Run.write`` of ``<tag>.run``) — and the files they cross together.
* **The configuration's stops**: from ``irglow run --config`` to the bound plan (the configuration is sealed
  after binding, so nothing reads it later): every irglow function that is handed the configuration or one of
  its tables or lists as an argument, and the files they are in (and, apart, those handed the whole of it).
* **Climbs**: a call, in one of those stacks, from a module of a lower layer of the import-linter contract
  (``pyproject.toml``) into one of a higher layer — a callback that reaches back up.

    python bench/call_paths.py --collection demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10 --ranker 'Lexical("bm25") >> LinearRerank()' \\
        --config configs/demo.toml

``--trace`` instead counts every irglow function handed the ranker (or a ranker equal to it), its tag, a unit of it,
its run or its run file — from ``Experiment`` to the run file (issue 68's targets: 60 functions in 12 files), then
on to its table (the run evaluated, the table's notes and plots: counted apart), and from
``irglow.pyterrier.transformer`` to its pipeline (12 in 6)::

    python bench/call_paths.py --trace --collection demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10 \\
        --ranker '(Lexical("bm25f") + Dense("glow")) >> MonoBERT()' --set glow.max_steps=2 --set rerank.monobert.max_steps=2

``--ranker`` is Python over ``irglow``'s rankers and ``examples/linear_rerank.py``'s ``LinearRerank``; the
collection is any ``Experiment`` takes (a BEIR folder, an ir_datasets id, a generated ``demo…``).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import inspect
import sys
import tempfile
import tomllib
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "irglow"


def layers() -> list[list[str]]:
    """The import-linter contract's layers, top first, each a list of module prefixes."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return [[m.strip() for m in layer.split(":")] for layer in contract["layers"]]


@functools.lru_cache(maxsize=None)  # asked on every call the profiler sees: a path resolved once per file
def module_of(filename: str) -> str | None:
    path = Path(filename).resolve()
    if PACKAGE not in path.parents:
        return None
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str, contract: list[list[str]]) -> int | None:
    for i, layer in enumerate(contract):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return i
    return None


def irglow_frames(stack) -> list[tuple[str, str]]:
    """``(module, function)`` of each irglow frame, outermost first."""
    return [(m, f.name) for f in stack if (m := module_of(f.filename)) is not None]


def climbs(frames: list[tuple[str, str]], contract) -> list[str]:
    """Calls from a lower layer's module into a higher layer's."""
    found = []
    for (caller, fn), (callee, gn) in zip(frames, frames[1:]):
        a, b = layer_of(caller, contract), layer_of(callee, contract)
        if a is not None and b is not None and b < a:
            found.append(f"{caller}.{fn} → {callee}.{gn}")
    return found


def files(frames: list[tuple[str, str]]) -> list[str]:
    """The modules a stack crosses, in order, a module once."""
    return list(dict.fromkeys(m for m, _ in frames))


def ranker_path(collection: str, spec: str, out: Path, settings: dict) -> dict[str, list[tuple[str, str]]]:
    """Run an Experiment of BM25 and ``spec``; the irglow stacks where the ranker is configured, bound and written."""
    import irglow
    from irglow import Experiment, rankers
    from irglow.runs import trec
    from irglow.stages import STAGES

    # examples/linear_rerank.py registered as its package would register it: an entry point
    dist = out.parent / "site" / "irglow_linear-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: irglow-linear\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[irglow.rerankers]\nlinear = linear_rerank:LinearReranker\n")
    sys.path[:0] = [str(out.parent / "site"), str(ROOT / "examples")]
    from linear_rerank import LinearRerank  # noqa: F401 (the plugin a --ranker may name)

    namespace = {name: getattr(irglow, name) for name in irglow.__all__}
    namespace["LinearRerank"] = LinearRerank
    ranker = eval(spec, namespace)  # a benchmark's own argument, as a shell command line
    stacks: dict[str, list[tuple[str, str]]] = {}

    def watch(owner, name: str, moment: str, when=lambda *a, **k: True):
        original = owner.__dict__[name]
        function = getattr(owner, name)
        callee = (module_of(function.__code__.co_filename), function.__qualname__)

        def wrapper(*args, **kwargs):
            if moment not in stacks and when(*args, **kwargs):  # the callers' frames, then the watched function's
                stacks[moment] = irglow_frames(traceback.extract_stack()[:-1]) + [callee]
            return function(*args, **kwargs)

        setattr(owner, name, wrapper)
        return lambda: setattr(owner, name, original)

    stage = next(s for s in STAGES if s.name == ranker.stage)
    undo = [watch(type(ranker), "configure", "configure", lambda self, *a: self is ranker),
            watch(stage.settings_class, "from_config", "bind"),
            watch(trec.Run, "write", "write", lambda self, path, *a, **k: Path(path).name == f"{ranker.tag}.run")]
    try:
        Experiment(collection, systems=[rankers.Lexical("bm25"), ranker], out=out, settings=settings).run()
    finally:
        for u in undo:
            u()
    return stacks


def profiled(run, on_call, varargs: bool = False):
    """``run()`` with ``on_call(frame, module, names)`` at every call into an irglow function (``names``: its
    parameters, ``*args`` and ``**kwargs`` too with ``varargs``), the profiler removed after."""
    def profile(frame, event, arg):
        if event != "call":
            return
        module = module_of(frame.f_code.co_filename)
        if module is None:
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        if varargs:
            count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        on_call(frame, module, code.co_varnames[:count])

    sys.setprofile(profile)
    try:
        return run()
    finally:
        sys.setprofile(None)


def config_stops(config: str, overrides: list[str]):
    """Every irglow function handed the configuration (or one of its tables) by the binding of ``irglow run``'s
    loaded configuration, in the order first reached; those handed the configuration itself; and the (caller's
    module, its module) of each call to one."""
    from irglow.config import SealedConfig, load_config
    from irglow.plan import bind_plan

    reached: dict[tuple[str, str], None] = {}
    whole: dict[tuple[str, str], None] = {}  # those handed the configuration itself, not one of its tables
    calls: set[tuple[str, str]] = set()  # (caller's module, callee's module) of each stop reached from irglow
    tables: set[int] = set()

    def collect(value) -> None:
        if isinstance(value, dict):
            tables.add(id(value))
            for v in value.values():
                collect(v)
        elif isinstance(value, list):  # a list of it (fusion.runs, lexical.systems) is the configuration too
            tables.add(id(value))
            for v in value:
                collect(v)

    def stop(frame, module, names):
        code = frame.f_code
        if code.co_qualname.startswith("SealedConfig."):  # the configuration's own methods: not a stop
            return
        if any(id(frame.f_locals.get(n)) in tables for n in names):
            reached.setdefault((module, code.co_qualname), None)
            if any(frame.f_locals.get(n) is config_object for n in names):
                whole.setdefault((module, code.co_qualname), None)
            caller = module_of(frame.f_back.co_filename if hasattr(frame.f_back, "co_filename")
                               else frame.f_back.f_code.co_filename) if frame.f_back else None
            if caller is not None:
                calls.add((caller, module))

    import irglow.commands.experiment  # noqa: F401 (what `irglow run` runs: loaded before the clock)

    reached[("irglow.commands.experiment", "cmd_run")] = whole[("irglow.commands.experiment", "cmd_run")] = None
    config_object = SealedConfig(load_config(config, overrides))
    collect(config_object)
    profiled(lambda: bind_plan(config_object), stop)
    return list(reached), list(whole), calls


def _handed(value, marks) -> bool:
    """Whether ``value`` is one of what a ranker travels as (``marks``), or holds one directly (a list, tuple, set or
    dict of them: a function handed the runs of a fusion is handed each)."""
    try:
        if marks(value):
            return True
        if isinstance(value, dict):  # dict's own view: a sealed configuration refuses to be read, not to be looked at
            return any(marks(k) or marks(v) for k, v in list(dict.items(value))[:10000])
        if isinstance(value, (list, tuple, set, frozenset)):
            return any(marks(v) for v in list(value)[:10000])
    except Exception:  # noqa: BLE001 - an object mid-construction
        return False
    return False


def traced_path(collection: str, spec: str, out: Path, settings: dict, pyterrier: bool = False):
    """Every irglow function handed the ranker (or a ranker equal to it), its tag, a unit of it, its run or its run
    file, from ``Experiment(...).run()`` to the run file (``pyterrier``: then from ``transformer(ranker, out)`` to its
    PyTerrier pipeline), in the order first reached: ``[(module, function)]`` for each path."""
    import irglow
    from irglow import Experiment, rankers
    from irglow.runs.trec import Run
    from irglow.stage import Unit

    namespace = {name: getattr(irglow, name) for name in irglow.__all__}
    ranker = eval(spec, namespace)  # a benchmark's own argument, as a shell command line
    tag = ranker.tag

    def marks(value) -> bool:
        try:
            if isinstance(value, rankers.Ranker):
                return value is ranker or value == ranker or value.tag == tag
            if isinstance(value, str):
                return value == tag or value.endswith((f":{tag}", f"/{tag}.run")) or value == f"{tag}.run"
            if isinstance(value, Path):
                return value.name == f"{tag}.run"
            if isinstance(value, Run):
                return value.tag == tag
            if isinstance(value, Unit):
                return value.name.endswith(f":{tag}") or tag in getattr(value, "tags", ())
        except Exception:  # noqa: BLE001 - an object mid-construction, a comparison that cannot be made
            return False
        return False

    written: list[bool] = []  # set once its run file is written: what follows evaluates and reports it
    write = Run.write

    def watched_write(self, path, *args, **kwargs):
        out = write(self, path, *args, **kwargs)
        if Path(path).name == f"{tag}.run":
            written.append(True)
        return out

    def trace(run) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        reached: dict[tuple[str, str], None] = {}
        after: dict[tuple[str, str], None] = {}

        def handed(frame, module, names):
            if any(_handed(frame.f_locals.get(n), marks) for n in names):
                (after if written else reached).setdefault((module, frame.f_code.co_qualname), None)

        profiled(run, handed, varargs=True)
        return list(reached), [k for k in after if k not in reached]

    made: list = []  # the experiment, built under the tracer: its binding is on the ranker's path too
    Run.write = watched_write
    try:
        to_file, after = trace(lambda: made.append(Experiment(collection, systems=[rankers.Lexical("bm25"), ranker],
                                                              out=out, settings=settings)) or made[0].run())
    finally:
        Run.write = write
    paths = {"experiment, to its run file": to_file, "experiment, to its table (record, evaluation, notes, plots)":
             to_file + after}
    if pyterrier:
        from irglow.pyterrier import transformer

        paths["pyterrier"] = trace(lambda: transformer(ranker, out))[1]  # after the run file, all of it
    return tag, paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collection", default="demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10")
    ap.add_argument("--ranker", default='Lexical("bm25") >> LinearRerank()')
    ap.add_argument("--config", default=str(ROOT / "irglow" / "configs" / "demo.toml"))
    ap.add_argument("--set", action="append", default=[], help="overrides of --config, as irglow run takes them")
    ap.add_argument("--trace", action="store_true",
                    help="count every function handed the ranker, its tag, a unit of it, its run or its run file (issue "
                         "68's ruler), from Experiment to its run file and into its PyTerrier transformer")
    args = ap.parse_args(argv)
    contract = layers()
    if args.trace:
        with tempfile.TemporaryDirectory() as tmp:
            settings = {"data_dir": str(Path(tmp) / "data"), "output.page": False,
                        **dict(item.split("=", 1) for item in args.set)}
            tag, paths = traced_path(args.collection, args.ranker, Path(tmp) / "out", settings,
                                     pyterrier=importlib.util.find_spec("pyterrier") is not None)
        print(f"## Every function handed `{args.ranker}` (tag `{tag}`), its units, its run or its run file\n")
        print("| path | functions | files |\n|:--|--:|--:|")
        for name, reached in paths.items():
            print(f"| {name} | {len(reached)} | {len(set(m for m, _ in reached))} |")
        first = list(paths.values())[0]
        for i, (name, reached) in enumerate(paths.items()):
            if i == 1:  # the first path is its beginning: what it adds
                name, reached = "then its record, evaluation, notes and plots", reached[len(first):]
            print(f"\n### {name}\n")
            for module in dict.fromkeys(m for m, _ in reached):
                print(f"- {module}: " + ", ".join(f for m, f in reached if m == module))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stacks = ranker_path(args.collection, args.ranker, Path(tmp) / "out", {"data_dir": str(Path(tmp) / "data"),
                                                                               "output.page": False})
    print(f"## The ranker {args.ranker} from Experiment to its run file\n")
    every: list[str] = []
    for moment in ("configure", "bind", "write"):
        frames = stacks.get(moment, [])
        every += files(frames)
        print(f"- {moment}: {' → '.join(files(frames)) or '(not reached)'}")
        for c in climbs(frames, contract):
            print(f"  - climb: {c}")
    crossed = list(dict.fromkeys(every))
    n_climbs = sum(len(climbs(stacks.get(m, []), contract)) for m in stacks)
    print(f"\n| files crossed | climbs |\n|---:|---:|\n| {len(crossed)} | {n_climbs} |\n")
    print("files: " + ", ".join(crossed))
    stops, whole, calls = config_stops(args.config, args.set)
    modules = list(dict.fromkeys(m for m, _ in stops))
    upward = sorted(f"{a} → {b}" for a, b in calls if (la := layer_of(a, contract)) is not None
                    and (lb := layer_of(b, contract)) is not None and lb < la)
    up = len(upward)
    print(f"\n## The configuration from `irglow run --config {args.config}` to the bound plan\n")
    print("| stops (the configuration or a table of it) | files | climbs | stops (the configuration itself) |\n"
          "|---:|---:|---:|---:|\n" f"| {len(stops)} | {len(modules)} | {up} | {len(whole)} |\n")
    for module, fn in stops:
        print(f"- {module}.{fn}" + (" (the configuration itself)" if (module, fn) in whole else ""))
    for climb in upward:
        print(f"- climb: {climb}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
