"""The docs' generated pages, made at build time (mkdocs-gen-files) from what the code declares, never copied:

- ``reference/settings.md``: every setting, from the declarations ``irglow settings`` prints;
- ``reference/cli.md``: every command and option, from irglow's argparse parsers;
- ``reference/api/``: a page per public module from its docstrings (mkdocstrings; ``docs/api_docstrings.py``
  links their cross-references and writes each signature's parameter table);
- ``reproductions.md``: the reproduction matrix, from ``configs/regressions.yaml``;
- ``benchmark-history.md``: ``bench/HISTORY.md``;
- ``tutorial.md``: ``docs/tutorial.ipynb`` as a page, with the outputs of running it at build time (``make docs``;
  kept in irglow's cache, keyed on the code, never in git).

``tests/docs/`` imports these functions to check that every command and setting is documented."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the modules whose docstrings make the API reference, in the order a user meets them
API_MODULES = ("irglow.experiment", "irglow.rankers", "irglow.pyterrier", "irglow.data.collection", "irglow.data.records",
               "irglow.index.lucene_index", "irglow.index.stats", "irglow.lexical.searchers", "irglow.runs.trec",
               "irglow.runs.fusion", "irglow.eval.compare", "irglow.eval.measures", "irglow.stage",
               "irglow.runs.keys", "irglow.models.rerank.kinds", "irglow.settings")

# a Sphinx cross-reference in a docstring (``:class:`~irglow.rankers.Ranker```): the reference renders each as a link
# or code (docs/api_docstrings.py), the module index as code
SPHINX_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def settings_markdown() -> str:
    from irglow.commands.reference import settings_reference

    return ("# Settings reference\n\nEvery setting of a configuration file, and of `--set section.key=value`, as "
            "`irglow settings` prints it: generated from the declarations (`irglow/settings.py` and the settings "
            "classes), so a setting added in code is here with no edit. A wrong type, an out-of-range value or a "
            "misspelt key stops a run before any work, naming the key.\n\n" + placeholders_as_text(settings_reference()))


def commands(parser: argparse.ArgumentParser | None = None, prefix: tuple[str, ...] = ()):
    """``[(("twbert", "train"), its parser), …]``: every command and sub-command of ``irglow``."""
    if parser is None:
        from irglow.cli import build_parser

        parser = build_parser()
    out = []
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its sub-parsers here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            helps = {a.dest: a.help for a in action._choices_actions}  # noqa: SLF001
            for name, sub in action.choices.items():
                out.append(((*prefix, name), sub, helps.get(name) or sub.description or ""))
                out += commands(sub, (*prefix, name))
    return out


def placeholders_as_text(markdown: str) -> str:
    """``[rerank.<kind>]``, ``runs/<tag>.run``: a ``<`` outside a code span written as ``&lt;``, which Markdown would
    otherwise pass on as the start of an HTML tag the browser swallows (``[rerank.]``, ``runs/.run``)."""
    out = []
    for line in markdown.split("\n"):
        parts = re.split(r"(`+[^`]*`+)", line)
        out.append("".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts))
    return "\n".join(out)


def _cell(text) -> str:
    return placeholders_as_text(str(text).replace("|", "\\|").replace("\n", " "))


def cli_markdown() -> str:
    lines = ["# Command-line reference", "",
             "Every `irglow` command and its options, generated from the command's own parser (the text "
             "`irglow <command> --help` prints).", ""]
    for path, parser, summary in commands():
        lines += [f"## `irglow {' '.join(path)}`", ""]
        if summary:
            lines += [_cell(summary), ""]
        rows = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction,  # noqa: SLF001
                                                                 argparse._SubParsersAction))]  # noqa: SLF001
        if rows:
            lines += ["| option | meaning | default |", "|:--|:--|:--|"]
            for a in rows:
                name = ", ".join(f"`{o}`" for o in a.option_strings) or f"`{a.dest}`"
                default = "" if a.default in (None, argparse.SUPPRESS) or not a.option_strings else f"`{a.default}`"
                lines.append(f"| {name} | {_cell(a.help or '')} | {_cell(default)} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def api_page(module: str) -> str:
    """``reference/api/<module>.md``: the module, every public member with its signature and parameter table."""
    return "\n".join([f"# `{module}`", "", f"::: {module}", "    options:", "      show_root_heading: false",
                      "      heading_level: 2", ""]) + "\n"


def api_markdown() -> str:
    """``reference/api/index.md``: the modules, in the order a user meets them, each with its summary line."""
    import importlib

    lines = ["# API reference", "",
             "Generated from the docstrings when the site is built, a page per module: every public class, function "
             "and method with its signature and a table of its parameters (types and defaults from the signature). "
             "Settings are in the [settings reference](../settings.md), commands in the "
             "[command-line reference](../cli.md).", "", "| module | what it holds |", "|:--|:--|"]
    for module in API_MODULES:
        doc = (importlib.import_module(module).__doc__ or "").strip()
        first = re.split(r"(?<=\.)\s", " ".join(doc.split()), maxsplit=1)[0] if doc else ""
        first = SPHINX_ROLE.sub(lambda m: f"`{m.group(2)}`", first)
        lines.append(f"| [`{module}`]({module}.md) | {_cell(placeholders_as_text(first))} |")
    return "\n".join(lines) + "\n"


def _shipped(config: str) -> str:
    """A matrix experiment's configuration as a user names it: ``configs/<path>`` (irglow's shipped files)."""
    path = Path(config).resolve()
    shipped = ROOT / "irglow" / "configs"
    return f"configs/{path.relative_to(shipped)}" if shipped in path.parents else str(config)


def _run_commands(e: dict, run: str) -> str:
    """The commands that make one lexical run of a matrix experiment and score it, to copy."""
    collection, split = (e["id"] if not e.get("about") else "path/to/folder"), e.get("test_split", "test")
    system = run.removesuffix("-rm3") + (" --rm3" if run.endswith("-rm3") else "")
    measures = " ".join(f"-m {m}" for m in e["expect"][run])
    return (f"`irglow search {collection} --split {split} --system {system} -o {run}.run && irglow eval {run}.run "
            f"--data {collection} --split {split} {measures}`")


def reproductions_markdown() -> str:
    """Pyserini's two-click reproduction pages, for irglow: per row the command to copy, irglow's figure, the
    published figure it reproduces (read from the installed Pyserini's own 2CR file) and ✓ where they agree."""
    from irglow.regressions import load_matrix_spec, published_figures

    matrix = load_matrix_spec(ROOT / "irglow" / "configs" / "regressions.yaml")
    lines = ["# Reproductions", "",
             "Each row: a run irglow makes, the command that makes it, irglow's figure and — where one exists — the "
             "published figure it reproduces, with ✓ where the two agree within the experiment's tolerance. The "
             "published figures are Pyserini's two-click reproductions (2CR) for BEIR, read when this page is built "
             "from the file the installed Pyserini ships (`pyserini/2cr/beir.yaml`); irglow's are the reproduction "
             "matrix's (`configs/regressions.yaml`), which `irglow regressions` (`make regressions`) re-runs through "
             "the pipeline, failing on any figure that moves. `make test` runs its `lexical` tag. Collections are "
             "ir_datasets ids: the [install page](install.md#getting-data) says how to have them offline. An "
             "experiment marked optional is skipped, and said so, where its collection cannot be had.", ""]
    for e in matrix:
        published = published_figures(e["published"]) if e.get("published") else {}
        source = "Pyserini 2CR, BEIR" if published else ""
        about = e.get("about") or f"`{e['id']}`"
        tags = e.get("tags", [])
        check = f"`irglow regressions --tags {tags[0]}`" if tags else "`irglow regressions`"
        lines += [f"## {e['name']}", "",
                  f"{about}, split `{e.get('test_split', 'test')}`"
                  + (f", trained on {'`' + e['train_id'] + '` ' if e.get('train_id') else ''}"
                     f"`{e.get('train_split', 'train')}` with `{_shipped(e['config'])}`"
                     if e.get("config") else ", the pipeline's lexical defaults")
                  + f"; tolerance {e['tolerance']}. Check the whole experiment: {check}.", "",
                  "| run | irglow | published | | command |", "|:--|:--|:--|:-:|:--|"]
        for run, figures in e["expect"].items():
            ours = ", ".join(f"{m} {v:.4f}" for m, v in figures.items())
            theirs = published.get(run, {})
            shared = [m for m in figures if m in theirs]
            agree = all(abs(figures[m] - theirs[m]) <= e["tolerance"] for m in shared) if shared else None
            shown = ", ".join(f"{m} {theirs[m]:.4f}" for m in shared) + (f" ({source})" if shared else "")
            command = (_run_commands(e, run) if not e.get("config") and not e["id"].startswith("demo") else
                       check if e["id"].startswith("demo") else
                       f"`irglow run --config {_shipped(e['config'])} --set collection.name="
                       f"{e['id'] if not e.get('about') else 'path/to/folder'} "
                       + (f"--set collection.train={e['train_id']} " if e.get("train_id") else "")
                       + (f"--set collection.test_split={e['test_split']} " if e.get("test_split", "test") != "test"
                          else "")
                       + "".join(f"--set {item} " for item in e.get("set", []))
                       + f"--set output.dir=runs/{e['name']}`")
            lines.append(f"| `{run}` | {ours} | {shown or '–'} | {'✓' if agree else '✗' if agree is False else ''} "
                         f"| {command} |")
        lines.append("")
    return placeholders_as_text("\n".join(lines)) + "\n"


EXECUTE_ENV = "IRGLOW_DOCS_EXECUTE"  # `make docs` sets it: the tutorial is run when the site is built


def _executed_tutorial(notebook: dict) -> dict | None:
    """The tutorial with its outputs: run when the site is built with ``IRGLOW_DOCS_EXECUTE=1`` (``make docs``),
    kept under ``$IRGLOW_CACHE/docs`` keyed on the notebook's and irglow's code (not in git), so a later build of the
    same code shows the same outputs without running it again.  ``None``: neither asked for nor kept."""
    import hashlib
    import os

    from irglow.utils.digest import tree_digest
    from irglow.utils.paths import cache_dir

    key = hashlib.sha256((json.dumps(notebook["cells"], sort_keys=True) + tree_digest(ROOT / "irglow")).encode())
    kept = cache_dir("docs") / f"tutorial-{key.hexdigest()[:16]}.ipynb"
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))
    if os.environ.get(EXECUTE_ENV) != "1":
        return None
    import nbclient
    import nbformat

    from irglow.utils.atomic import atomic_write_text

    executed = nbformat.reads(json.dumps(notebook), as_version=4)
    out = cache_dir("docs") / "tutorial-runs"
    saved = os.environ.get("IRGLOW_TUTORIAL_OUT")
    os.environ["IRGLOW_TUTORIAL_OUT"] = str(out)  # the kernel inherits it: nothing written inside docs/
    try:
        nbclient.NotebookClient(executed, timeout=1800, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT / "docs")}}).execute()
    finally:
        if saved is None:
            os.environ.pop("IRGLOW_TUTORIAL_OUT", None)
        else:
            os.environ["IRGLOW_TUTORIAL_OUT"] = saved
    atomic_write_text(kept, nbformat.writes(executed))
    return json.loads(kept.read_text(encoding="utf-8"))


def _outputs_markdown(cell: dict) -> list[str]:
    """A code cell's outputs as the page shows them: text as a text block, pictures inline; a frame of a local page
    (the results browser) as the line that names it."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("name") == "stderr":  # progress bars and library warnings: the run's noise, not its result
            continue
        data = output.get("data", {})
        text = "".join(output.get("text", "")) if output.get("output_type") == "stream" else \
            "".join(data.get("text/plain", "")) if "image/png" not in data and "text/html" not in data else ""
        if "image/png" in data:
            parts.append(f"![output](data:image/png;base64,{''.join(data['image/png']).strip()})")
        elif text.strip():
            parts.append("```text\n" + text.rstrip("\n") + "\n```")
    return parts


def tutorial_markdown() -> str:
    notebook = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text(encoding="utf-8"))
    executed = _executed_tutorial(notebook)
    note = ("*This page is `docs/tutorial.ipynb` with the outputs of running it when the site was built (open it in "
            "Jupyter to run it yourself); the tests run it on every change.*" if executed else
            "*This page is `docs/tutorial.ipynb` (open it in Jupyter to run it); `make docs` builds the site with its "
            "outputs, and the tests run it on every change.*")
    parts = ["<!-- generated from docs/tutorial.ipynb -->", "", note, ""]
    for cell in (executed or notebook)["cells"]:
        source = "".join(cell["source"])
        parts.append(source if cell["cell_type"] == "markdown" else f"```python\n{source}\n```")
        parts.append("")
        if cell["cell_type"] == "code":
            parts += [*_outputs_markdown(cell), ""]
    return "\n".join(parts)


def history_markdown() -> str:
    """``benchmark-history.md``: ``bench/HISTORY.md``, the dated log BENCHMARKS.md grew from."""
    return (ROOT / "bench" / "HISTORY.md").read_text(encoding="utf-8")


PAGES = {"reference/settings.md": settings_markdown, "reference/cli.md": cli_markdown,
         "reference/api/index.md": api_markdown,
         **{f"reference/api/{m}.md": (lambda m=m: api_page(m)) for m in API_MODULES}, "reproductions.md": reproductions_markdown,
         "tutorial.md": tutorial_markdown, "benchmark-history.md": history_markdown}


def main() -> None:
    import mkdocs_gen_files

    for path, make in PAGES.items():
        with mkdocs_gen_files.open(path, "w") as f:
            f.write(make())


if __name__ != "gen_pages":  # run by mkdocs-gen-files; imported by the tests under its own name
    main()
