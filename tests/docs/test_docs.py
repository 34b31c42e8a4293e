"""Issue 62: the documentation site is built from the code and checked like it — it builds with no warning, offline,
and opens in a browser; every command and declared setting is in its reference; no page names a file, a setting or
a section that does not exist; the tutorial runs."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUIET = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}  # the tools' own banners


def _gen_pages():
    spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> dict[Path, str]:
    """What a reader reads: the README, the hand-written pages and the tutorial's cells."""
    pages = {p: p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
    notebook = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text(encoding="utf-8"))
    pages[ROOT / "docs" / "tutorial.ipynb"] = "\n".join("".join(c["source"]) for c in notebook["cells"])
    return pages


def _declared() -> dict[str, set[str]]:
    """Every settings section and its keys: the declared tables and the settings classes."""
    from irglow import settings
    from irglow.commands.reference import _settings_classes

    sections = {name: set(table) for name, table in settings.DECLARED.items()}
    for name, cls in _settings_classes().items():
        sections.setdefault(name, set()).update(settings.declared_fields(name, cls))
    for kind in ("monobert", "nrmf"):  # [rerank.<kind>] is each kind's table
        sections[f"rerank.{kind}"] = sections["rerank.<kind>"]
    return sections


def test_every_command_and_every_option_is_in_the_cli_reference():
    gen = _gen_pages()
    text = gen.cli_markdown()
    found = gen.commands()
    assert {" ".join(path) for path, _, _ in found} >= {"index", "search", "compare", "run", "zero-shot", "settings",
                                                       "twbert train", "glow search", "rerank", "nrmf train"}
    for path, parser, _ in found:
        assert f"## `irglow {' '.join(path)}`" in text, path
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert f"`{action.option_strings[0]}`" in text.split(f"## `irglow {' '.join(path)}`", 1)[1], \
                    (path, action.option_strings)


def test_every_declared_setting_is_in_the_settings_reference():
    text = _gen_pages().settings_markdown().replace("&lt;", "<")  # a placeholder is written as text on the page
    for section, keys in _declared().items():
        if section.startswith("rerank.") and section.count(".") == 1 and section != "rerank.<kind>":
            continue  # the kinds' tables are [rerank.<kind>]'s
        assert f"### [{section}]" in text, section
        body = text.split(f"### [{section}]", 1)[1].split("\n### ", 1)[0]
        for key in keys:
            assert f"| `{key}` |" in body, f"[{section}] {key}"


def test_no_page_names_a_file_or_a_setting_that_does_not_exist():
    declared = _declared()
    missing = []
    for page, text in _pages().items():
        where = page.relative_to(ROOT)
        for m in re.finditer(r"(?<![\w/.-])irglow/[A-Za-z0-9_./\-]+", text):
            path = m.group(0).rstrip(".,;:)")
            if not (ROOT / path).exists():
                missing.append(f"{where}: {path}")
        for m in re.finditer(r"\[([a-z_]+(?:\.[a-z_<>]+)*)\] ([a-z_]+)\b", text):
            section, key = m.groups()
            if section in declared and key not in declared[section]:
                missing.append(f"{where}: [{section}] {key}")
            elif section not in declared and section not in ("pyterrier", "section"):  # an extra; this test's own
                missing.append(f"{where}: [{section}] (no such section)")
    assert not missing, missing


def test_every_option_of_every_command_says_what_it_does():
    """Issue 70.8: 61 of ~200 options had no help (``search --k1``, ``run --config`` …); the parser is walked."""
    import argparse

    silent = [f"irglow {' '.join(path)} {' / '.join(a.option_strings) or a.dest}"
              for path, parser, _ in _gen_pages().commands() for a in parser._actions  # noqa: SLF001
              if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]  # noqa: SLF001
    assert silent == []
    # an option with a default says it in its --help (None, False and [] are "not given")
    unsaid = [f"irglow {' '.join(path)} {a.option_strings[-1]} (default {a.default!r})"
              for path, parser, _ in _gen_pages().commands() for a in parser._actions  # noqa: SLF001
              if a.option_strings and a.help not in (None, argparse.SUPPRESS)
              and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))  # noqa: SLF001
              and a.default not in (None, False, [], argparse.SUPPRESS) and "default" not in a.help]
    assert unsaid == []


def test_every_command_and_make_target_a_page_names_exists():
    """``irglow <command>`` and ``make <target>`` as a page writes them (in code) are commands and targets there are."""
    commands = {path[0] for path, _, _ in _gen_pages().commands()}
    targets = set(re.findall(r"(?m)^([a-z][\w-]*):", (ROOT / "Makefile").read_text()))
    missing = []
    for page, text in _pages().items():
        for pattern, known, what in ((r"irglow ([a-z][\w-]*)", commands, "command"),
                                     (r"make ([a-z][\w-]*)", targets, "make target")):
            for m in re.finditer(rf"(?m)`{pattern}|^\s*{pattern}", text):
                name = m.group(1) or m.group(2)
                if name not in known:
                    missing.append(f"{page.relative_to(ROOT)}: {what} {name}")
    assert not missing, missing


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for command in ("make run", "make test", "make run-msmarco", "make docs"):
        assert command in readme


def test_the_site_builds_offline_with_no_warning_and_opens_in_a_browser(tmp_path):
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, **QUIET, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY":
                                "http://127.0.0.1:9"})  # offline: a fetch would fail, and fail the build
    assert built.returncode == 0 and "WARNING" not in built.stderr, built.stderr[-3000:]
    for page in ("index.html", "tutorial/index.html", "reproductions/index.html", "reference/api/index.html"):
        assert (site / page).is_file(), page
    stray = {str(page.relative_to(site)): tags for page in site.rglob("*.html")
             if (tags := _stray_tags(page.read_text(encoding="utf-8")))}
    assert stray == {}, f"tags no HTML page holds (a placeholder such as <kind> read as a tag): {stray}"
    settings_page = (site / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "[rerank.&lt;kind&gt;]" in settings_page or "[rerank.&lt;kind>]" in settings_page
    _check_api_pages(site)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.integration.test_report import _driver

    driver = _driver()
    try:
        driver.get((site / "index.html").as_uri())
        WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.TAG_NAME, "h1"))
        assert driver.find_element(By.TAG_NAME, "h1").text == "irglow"
        driver.get((site / "reference" / "settings" / "index.html").as_uri())
        WebDriverWait(driver, 30).until(lambda d: "rerank_also" in d.find_element(By.TAG_NAME, "body").text)
        assert "other runs the trained models re-rank" in driver.find_element(By.TAG_NAME, "body").text
        driver.get((site / "reference" / "cli" / "index.html").as_uri())
        WebDriverWait(driver, 30).until(lambda d: "--config" in d.find_element(By.TAG_NAME, "body").text)
        assert "irglow zero-shot" in driver.find_element(By.TAG_NAME, "body").text
        # issue 82.6: at 1280 px no code block or table of any page is cut (100 were before), and each page links
        # the previous and the next one
        driver.set_window_size(1280, 900)
        cut = {}
        for page in sorted(site.rglob("index.html")):
            driver.get(page.as_uri())
            wide = driver.execute_script(
                "return Array.from(document.querySelectorAll('.md-content pre > code, .md-content "
                ".md-typeset__scrollwrap, .md-content table')).filter(e => e.scrollWidth > e.clientWidth + 1)"
                ".map(e => e.textContent.slice(0, 60))")
            if wide:
                cut[str(page.relative_to(site))] = wide
        assert cut == {}, f"cut at 1280 px: {cut}"
        driver.get((site / "install" / "index.html").as_uri())
        assert [a.text.split()[-1] for a in driver.find_elements(By.CSS_SELECTOR, ".md-footer__link")] == \
            ["started", "Tutorial"]
    finally:
        driver.quit()


def _public_members(module_name: str) -> list[str]:
    """Every public class and function a module defines, and each public method of those classes, by full path."""
    import importlib
    import inspect

    module = importlib.import_module(module_name)
    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append(f"{module_name}.{name}")
        if inspect.isclass(obj):
            out += [f"{module_name}.{name}.{m}" for m, v in vars(obj).items()
                    if not m.startswith("_") and (inspect.isfunction(v) or isinstance(v, (classmethod, staticmethod)))]
    return out


def _check_api_pages(site: Path) -> None:
    """Issue 70.2: a page per module; every public member there (with or without a docstring); no Sphinx role
    printed raw; ``Experiment``'s constructor arguments in its parameter table; cross-references that link."""
    import html as html_lib

    for module in _gen_pages().API_MODULES:
        page = (site / "reference" / "api" / module / "index.html").read_text(encoding="utf-8")
        missing = [m for m in _public_members(module) if f'id="{m}"' not in page]
        assert missing == [], f"{module}: public members missing from its page: {missing}"
        text = html_lib.unescape(re.sub(r"<[^>]+>", " ", page))
        raw = re.findall(r":(?:class|meth|func|mod|attr|data|exc|obj):`", text)
        assert raw == [], f"{module}: Sphinx roles printed raw: {raw[:3]}"
        assert not re.search(r"^\s*Args:\s*$", text, re.M), f"{module}: an Args section printed raw"
    page = (site / "reference" / "api" / "irglow.experiment" / "index.html").read_text(encoding="utf-8")
    table = page[page.index('id="irglow.experiment.Experiment"'):]
    table = html_lib.unescape(re.sub(r"<[^>]+>", " ", table[:table.index("Methods")]))
    for argument in ("collection", "systems", "measures", "baseline", "train", "train_split", "test_split", "config",
                     "settings", "out", "seed"):
        assert re.search(rf"\b{argument}\b\s+\S", table), argument
    assert "What to evaluate on" in table
    rankers = (site / "reference" / "api" / "irglow.rankers" / "index.html").read_text(encoding="utf-8")
    assert 'href="../irglow.stage/#irglow.stage.Stage.transformer"' in rankers  # a :meth: role, now a link
    # issue 82.3: at most 10 % of the parameter rows without a description (a dash in its cell)
    rows = blank = 0
    for module in _gen_pages().API_MODULES:
        page = (site / "reference" / "api" / module / "index.html").read_text(encoding="utf-8")
        for table in re.findall(r'doc-section-title">Parameters:</span>.*?<tbody>(.*?)</tbody>', page, re.S):
            for row in re.findall(r"<tr.*?</tr>", table, re.S):
                cells = [html_lib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
                         for c in re.findall(r"<td.*?>(.*?)</td>", row, re.S)]
                rows += 1
                blank += len(cells) > 2 and cells[2] in ("", "—")
    assert rows > 500 and blank <= rows / 10, f"{blank} of {rows} parameter rows have no description"


HTML_TAGS = set("""a abbr article aside b blockquote body br button caption circle code col colgroup dd del details
dialog div dl dt em figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hr html i img input kbd label legend li
link main mark meta nav noscript ol option p path pre script section select small source span strong style sub summary
sup svg table tbody td template textarea tfoot th thead time title tr u ul var g rect line polyline polygon defs use
symbol ellipse text tspan clippath lineargradient stop mask iframe picture video audio track canvas map area object param
embed wbr s q cite dfn data output progress meter fieldset optgroup datalist slot""".split())


def _stray_tags(page: str) -> set[str]:
    """Start tags in ``page`` that are no HTML (or SVG) element: a ``<kind>`` or ``<tag>`` the Markdown passed on."""
    from html.parser import HTMLParser

    found: set[str] = set()

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag not in HTML_TAGS:
                found.add(tag)

    Tags().feed(page)
    return found


def test_placeholders_are_written_as_text():
    """Issue 70.6: ``[rerank.<kind>]`` rendered as ``[rerank.]``, ``runs/<tag>.run`` as ``runs/.run``."""
    import re

    gen = _gen_pages()
    assert gen.placeholders_as_text("### [rerank.<kind>] and `runs/<tag>.run`") == \
        "### [rerank.&lt;kind>] and `runs/<tag>.run`"
    for page in (gen.settings_markdown(), gen.cli_markdown(), gen.reproductions_markdown()):
        outside_code = re.sub(r"`+[^`]*`+", "", page)
        assert "<" not in outside_code.replace("<!--", ""), re.findall(r".{20}<.{20}", outside_code)[:3]
    assert "[rerank.&lt;kind>]" in gen.settings_markdown()


@pytest.mark.slow
def test_the_tutorial_runs(tmp_path):
    """The notebook end to end, as a reader runs it (its outputs are never stored: docs/tutorial.ipynb has none)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    env = {"IRGLOW_TUTORIAL_OUT": str(tmp_path / "out"), "IRGLOW_DATA": str(tmp_path / "data"),
           "IRGLOW_TUTORIAL_COLLECTION": "demo:n_topics=12,docs_per_topic=4,n_roundups=10,n_background=10"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    printed = "\n".join(o.get("text", "") for c in notebook.cells for o in c.get("outputs", []))
    assert "| bm25f+twbert " in printed and "#/query/" in printed
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "bm25f+twbert.run").is_file()


def test_every_command_shows_an_example_that_parses():
    """Issue 70.8: no ``--help`` had an example; each command's is one a reader can copy (it parses as written)."""
    import shlex

    from irglow.cli import EXAMPLES, build_parser

    paths = {" ".join(path) for path, _, _ in _gen_pages().commands()}
    assert set(EXAMPLES) == paths
    parser = build_parser()
    for name, text in EXAMPLES.items():
        for line in text.split("\n"):
            argv = shlex.split(line.split("|")[-1].strip())  # `zcat run.gz | irglow eval - …`: irglow's part
            assert argv[0] == "irglow" and " ".join(argv[1:]).startswith(name.split(" ")[0]), line
            parser.parse_args(argv[1:])


def test_no_page_names_this_repositorys_neighbours():
    """Issue 70.3: 31 lines named ../shared/…; a reader's collections are ir_datasets ids or their own folders."""
    assert [str(p) for p, text in _pages().items() if "../shared" in text] == []
    gen = _gen_pages()
    generated = {name: make() for name, make in gen.PAGES.items() if not name.startswith("reference/api/")}
    assert [name for name, text in generated.items() if "../shared" in text or "shared/data" in text] == []


def test_the_reproductions_page_gives_a_command_and_the_published_figure_per_row():
    """Issue 70.4 (Pyserini's 2CR pages): per row the command to copy, irglow's figure, the published one, ✓."""
    page = _gen_pages().reproductions_markdown()
    bm25 = next(line for line in page.splitlines() if line.startswith("| `bm25` | nDCG@10 0.6789"))
    assert "nDCG@10 0.6789, R@100 0.9253, R@1000 0.9767 (Pyserini 2CR, BEIR) | ✓ |" in bm25
    assert "`irglow search beir/scifact --split test --system bm25 -o bm25.run && irglow eval bm25.run" in bm25
    assert "| `bm25-mf` | nDCG@10 0.6647" in page and page.count("| ✓ |") >= 2 and "| ✗ |" not in page
    assert "../" not in page and "shared" not in page


def test_the_tutorial_writes_outside_docs_and_its_page_shows_outputs(tmp_path, monkeypatch):
    """Issue 70.5: run from Jupyter in docs/, the tutorial wrote 350 MB into docs/runs/ (then published by the next
    build); it writes beside the clone's runs, on make run's collection; the page shows the outputs of a run."""
    notebook = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text(encoding="utf-8"))
    docs = tmp_path / "clone" / "docs"
    docs.mkdir(parents=True)
    (docs / "tutorial.ipynb").write_text("{}")
    monkeypatch.chdir(docs)  # where Jupyter starts when the notebook is opened from the file browser
    for name in ("IRGLOW_TUTORIAL_OUT", "IRGLOW_TUTORIAL_COLLECTION", "IRGLOW_DATA"):
        monkeypatch.setenv(name, "-")  # recorded, so that what the cell sets is undone after the test
        monkeypatch.delenv(name)
    scope: dict = {}
    exec("".join(notebook["cells"][1]["source"]), scope)
    assert scope["OUT"] == tmp_path / "clone" / "runs" / "tutorial"
    assert Path.cwd() == tmp_path / "clone"  # relative outputs (qrels/, runs/) beside the clone's, not in docs/
    assert os.environ["IRGLOW_DATA"] == str(tmp_path / "clone" / "data")
    from irglow.config import load_config

    assert scope["COLLECTION"] == load_config("configs/demo.toml")["collection"]["name"]  # make run's
    gen = _gen_pages()
    executed = json.loads(json.dumps(notebook))
    executed["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["demo:n_topics=120 → x\n"]}]
    monkeypatch.setattr(gen, "_executed_tutorial", lambda nb: executed)
    page = gen.tutorial_markdown()
    assert "```text\ndemo:n_topics=120 → x\n```" in page and "outputs of running it when the site was built" in page
    monkeypatch.setattr(gen, "_executed_tutorial", lambda nb: None)
    assert "`make docs` builds the site with its outputs" in gen.tutorial_markdown()


def _figure_tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each ``<!-- figures: experiment -->`` table of a page: (experiment, header, rows)."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        found = re.match(r"<!-- figures: ([\w-]+) -->", line.strip())
        if not found:
            continue
        table = []
        for row in lines[i + 1:]:
            if not row.startswith("|"):
                break
            table.append([c.strip() for c in row.strip().strip("|").split("|")])
        out.append((found.group(1), table[0], [r for r in table[2:]]))
    return out


def test_every_worked_example_gives_the_figures_its_benchmark_pins():
    """Issue 70.3: a page per model, each figure checked against the benchmark that produced it — the reproduction
    matrix's experiment, which ``irglow regressions`` re-runs through the pipeline."""
    from irglow.regressions import load_matrix_spec

    matrix = {e["name"]: e for e in load_matrix_spec(ROOT / "irglow" / "configs" / "regressions.yaml")}
    pages = sorted((ROOT / "docs" / "examples").glob("*.md"))
    assert {p.stem for p in pages} >= {"index", "twbert", "glow", "fusion", "monobert", "nrmf", "zero-shot"}
    checked = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "beir/" in text, page.name
        if page.stem != "index":
            assert re.search(r"\b\d+ (?:min|s)\b.*2 (?:CPU )?cores|2 (?:CPU )?cores.*\b\d+ (?:min|s)\b", text), \
                f"{page.name}: no cost on 2 CPU cores"
        tables = _figure_tables(text)
        assert tables, f"{page.name}: no figures table (<!-- figures: experiment --> before it)"
        for experiment, header, rows in tables:
            expect = matrix[experiment]["expect"]
            for row in rows:
                run = re.fullmatch(r"`([^`]+)`", row[header.index("run")])
                assert run, (page.name, row)
                for measure, cell in zip(header, row):
                    value = re.match(r"[\d.]+", cell)
                    if measure in expect[run.group(1)] and value:
                        assert float(value.group()) == expect[run.group(1)][measure], (page.name, run.group(1), measure)
                        checked += 1
    assert checked >= 20
