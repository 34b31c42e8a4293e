"""How fast the results browser opens at MS MARCO size, in headless Chromium (Debian's chromium + chromedriver).

Generates ``--runs`` runs of ``--queries`` queries × the top ``--depth`` documents (each query's documents drawn
from a pool of ``--pool``, so runs share documents as real ones do), judgments, and a title and snippet per
document; builds the page with :mod:`irglow.eval.report` (no collection needed: the texts are generated) and
opens it ``--repeats`` times: the time until the overview is drawn (navigation start → ready, the page's own
clock), then until a query view has decoded its chunk.  Prints a table and the ratio to the 3 s target.
``--screenshots DIR --page FILE`` instead saves the three views of an existing report as PNGs (docs/).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(out: Path, runs: int, queries: int, depth: int, pool: int, seed: int = 0) -> Path:
    from irglow.data.records import Qrel
    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(5000)])
    qtext = {f"q{i}": " ".join(rng.choice(words, 4)) for i in range(queries)}
    pools = {q: [f"d{i}-{j}" for j in range(pool)] for i, q in enumerate(qtext)}
    qrels = [Qrel(q, d, int(rng.integers(0, 3))) for q, docs in pools.items() for d in rng.choice(docs, 8, False)]
    made = {}
    for r in range(runs):
        ranking = {}
        for q, docs in pools.items():
            picked = rng.choice(docs, depth, replace=False)
            ranking[q] = [(d, float(depth - k) + r * 0.01) for k, d in enumerate(picked)]
        made[f"run{r}"] = Run(ranking, f"run{r}")
    cmp = compare(made, qrels, ["nDCG@10", "RR@10", "P@10"], baseline="run0", permutations=1000)

    class Texts:  # titles and ~250-character snippets, as a real corpus gives them
        name = "generated"

        def docs_iter(self):
            from irglow.data.records import make_document

            for q, docs in pools.items():
                for d in docs:
                    picked = words[rng.integers(0, len(words), 48)]
                    yield make_document(d, title=" ".join(picked[:8]), text=" ".join(picked[8:]))

    data = report_data(cmp, made, qrels, qtext, Texts(), depth=depth, title="report at MS MARCO size")
    path = out / "report.html"
    path.write_text(render(data), encoding="utf-8")
    return path


def driver():
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def wait_ready(d, view: str, timeout: float = 60) -> float:
    end = time.time() + timeout
    while time.time() < end:
        if d.execute_script("return document.body.dataset.ready === '1' && document.body.dataset.view") == view:
            return float(d.execute_script("return document.body.dataset.readyAt") or "nan")
        time.sleep(0.02)
    raise TimeoutError(view)


def screenshots(page: Path, folder: Path, run: str = "twbert", baseline: str = "bm25") -> None:
    """The page's views as PNGs at 1,280 px (docs/): overview, why (breakdown), queries, a query view and a
    document opened with every field."""
    d = driver()
    d.set_window_size(1280, 1000)
    folder.mkdir(parents=True, exist_ok=True)
    uri = page.resolve().as_uri()

    def shot(name: str, height: int = 1000) -> None:
        d.set_window_size(1280, min(height, max(1000, d.execute_script("return document.body.scrollHeight"))))
        time.sleep(0.3)
        d.save_screenshot(str(folder / f"report-{name}.png"))
        d.set_window_size(1280, 1000)

    try:
        d.get(uri + "#/overview")
        wait_ready(d, "overview")
        shot("overview", 1500)
        d.get(uri + f"#/breakdown?run={run}")
        wait_ready(d, "breakdown")
        shot("breakdown", 1500)
        d.get(uri + f"#/queries?run={run}&filter=all&sort=delta")
        wait_ready(d, "queries")
        shot("queries")
        first = d.execute_script("return document.querySelector('#query-table tbody tr').dataset.qid")
        d.get(uri + f"#/query/{first}?a={baseline}&b={run}")
        wait_ready(d, "query")
        shot("query", 1400)
        d.find_element("css selector", "button.open-doc").click()
        time.sleep(0.3)
        d.save_screenshot(str(folder / "report-document.png"))
    finally:
        d.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--queries", type=int, default=7000)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--pool", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="out/report-open")
    ap.add_argument("--screenshots", help="save the views of --page into this folder instead")
    ap.add_argument("--page")
    ap.add_argument("--run", default="twbert", help="with --screenshots: the run shown against --baseline")
    ap.add_argument("--baseline", default="bm25")
    args = ap.parse_args()
    if args.screenshots:
        screenshots(Path(args.page), Path(args.screenshots), args.run, args.baseline)
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    page = build(out, args.runs, args.queries, args.depth, args.pool)
    built = time.perf_counter() - t
    size = page.stat().st_size / 2 ** 20
    d = driver()
    opens, views = [], []
    try:
        for _ in range(args.repeats):
            d.get("about:blank")
            d.get(page.resolve().as_uri() + "#/overview")
            opens.append(wait_ready(d, "overview") / 1000)
            t = time.perf_counter()
            d.execute_script("location.hash = '#/query/q6999?a=run0&b=run9'")
            wait_ready(d, "query")
            views.append(time.perf_counter() - t)
    finally:
        d.quit()
    from tabulate import tabulate

    rows = [("page size (MB)", f"{size:.1f}"), ("build (s)", f"{built:.1f}"),
            ("open → overview drawn (s, median)", f"{np.median(opens):.2f}"),
            ("overview → a query view decoded (s, median)", f"{np.median(views):.2f}")]
    text = (f"{args.runs} runs × {args.queries:,} queries × top {args.depth}\n\n"
            + tabulate(rows, headers=["", "value"], tablefmt="github", disable_numparse=True)
            + f"\n\nopening / 3 s target: {np.median(opens) / 3:.2f} (target ≤ 1.00)")
    print(text)
    (out / "report-open.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
