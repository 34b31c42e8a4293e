"""Issue 32, the results browser: the page's data by hand (τ, snippets, escaping, missing documents), and the page
itself driven in headless Chromium (Debian's chromium + chromium-driver through Selenium): overview → queries →
a query view, highlighted terms, grades, unjudged marks and TW-BERT weights against the run files, a pasted URL
fragment, no JavaScript error, and documents whose text is markup rendered as text."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

from irglow.cli import main
from irglow.data.records import Qrel, make_document
from irglow.eval.report import read_page, snippet
from tests.files import decode_details

ROOT = Path(__file__).resolve().parents[2]
XSS = '<script>alert(1)</script><img src=x onerror="document.title=\'owned\'">'




def test_snippet_of_a_huge_document_is_a_window_around_the_first_query_term():
    text = "filler " * 700_000 + "the lyme disease ticks " + "more " * 10
    s = snippet(text, {"lyme"})
    assert len(s) < 340 and "lyme disease" in s and s.startswith("…")
    assert snippet("short text", {"absent"}) == "short text"


class _Coll:
    """A collection without titles, with markup and non-Latin text, and a 5 MB document."""

    name = "tiny"

    def docs_iter(self):
        yield make_document("d1", text=XSS + " lyme")
        yield make_document("d2", text="Болезнь Лайма lyme " + "x" * 5_000_000)
        yield make_document("d3", text="ticks and lyme")


def _report(tmp_path):
    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    qrels = [Qrel("q1", "d1", 2), Qrel("q1", "d3", 0), Qrel("q1", "gone", 1)]
    runs = {"a": Run({"q1": [("d1", 3.0), ("d2", 2.0), ("gone", 1.0)], "qX": [("d1", 1.0)]}, "a"),
            "b": Run({"q1": [("d2", 3.0), ("d3", 2.0), ("d1", 1.0)]}, "b")}
    cmp = compare(runs, qrels, ["nDCG@10"], baseline="a")
    return render(report_data(cmp, runs, qrels, {"q1": "lyme <b>ticks</b>"}, _Coll(), title="t <i>"))


def test_the_page_holds_markup_in_documents_and_queries_as_data_only(tmp_path):
    page = _report(tmp_path)
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    data = read_page(tmp_path / "page.html")
    # the JSON data, one element per compressed chunk and the page's own code: nothing from a document
    assert page.count("<script") == 2 + len(data["chunks"]) and len(data["chunks"]) == 1
    assert "<b>ticks" not in page and "alert(1)" not in page  # query text escaped; documents compressed
    assert "<title>t &lt;i&gt;</title>" in page
    assert [q["id"] for q in data["queries"]] == ["q1"]  # a run's query the qrels lack is not listed
    detail = decode_details(data)[0]["q1"]
    assert detail["missing"] == ["gone"] and detail["docs"]["gone"] is None
    assert detail["docs"]["d1"][0] == "" and XSS in detail["docs"]["d1"][1]  # no title field: none shown
    assert len(detail["docs"]["d2"][1]) < 340 and "Болезнь" in detail["docs"]["d2"][1]
    assert detail["grades"] == {"d1": 2, "d3": 0, "gone": 1}
    assert data["queries"][0]["unjudged"] == {"a": 1, "b": 1}
    # a: d1 d2 gone, b: d2 d3 d1, over the union (d2 d3 d1 gone): C = 1/1, 0/2, 2/3 → 2/3·5/3 − 1 = 1/9;
    # RBO (p 0.9): X = 0, 1, 2 → 2/3·0.729 + (0.1/0.9)·(1/2·0.81 + 2/3·0.729) = 0.5850
    assert data["queries"][0]["tau"]["b"] == pytest.approx(1 / 9, abs=1e-4)
    assert data["queries"][0]["rbo"]["b"] == pytest.approx(0.585, abs=1e-4)


# -- the page in a real browser ---------------------------------------------------------------------------
def _driver():
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        chromium = None
    if not (chromium and chromedriver):
        pytest.skip("browser tests need Debian's chromium and chromium-driver (make test installs them as root: "
                    "apt-get install -y chromium chromium-driver) and selenium (pip install -e '.[test]')")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                "--disable-gpu"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=options)


@pytest.fixture(scope="module")
def browser():
    driver = _driver()
    yield driver
    driver.quit()


def _errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _ready(driver, view: str):
    """The page has rendered the address it is at now, as ``view``: ready, and the hash it rendered is the current
    one (after ``j`` or a new fragment the previous render is still ready, of the same view, until the
    hashchange is handled: waiting on ready alone raced it on a busy machine)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "const b = document.body.dataset; return b.ready === '1' && b.hash === location.hash && b.view") == view)


def _shows(driver, element_id: str, text: str):
    """Wait until the element's text is ``text`` (what a navigation was for), then return it; the element being
    replaced by the render under way (stale) or not there yet is waited through."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: d.find_element("id", element_id).text == text)
    return text


@pytest.fixture(scope="module")
def demo_report(module_tmp):
    """bm25 and tfidf runs of the small demo, and a page with an (untrained) TW-BERT model's weights for bm25."""
    from irglow.data.collection import load_collection
    from irglow.models.twbert.model import TWBert, TWBertConfig
    from tests.integration.pipelines import SMALL_DEMO

    tmp = module_tmp / "report"
    tmp.mkdir()
    data = str(tmp / "data")
    for system in ("bm25", "tfidf"):
        assert main(["search", SMALL_DEMO, "--split", "test", "--system", system, "-o", str(tmp / f"{system}.run"),
                     "--data-dir", data, "--depth", "20"]) == 0
    model = tmp / "twbert"
    TWBert.from_pretrained_bert(TWBertConfig(max_query_tokens=32)).save(model)
    assert main(["report", str(tmp / "bm25.run"), str(tmp / "tfidf.run"), "--data", SMALL_DEMO, "--split", "test",
                 "-m", "nDCG@10 R@100", "--twbert", f"bm25={model}", "--data-dir", data,
                 "-o", str(tmp / "report.html")]) == 0
    return tmp, load_collection(SMALL_DEMO)


def _shot(driver, name: str) -> None:
    folder = os.environ.get("IRGLOW_SCREENSHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"report-{name}.png"))


def test_browser_overview_queries_and_query_view(browser, demo_report):
    from selenium.webdriver.common.by import By

    from irglow.runs.trec import Run

    tmp, coll = demo_report
    url = (tmp / "report.html").as_uri()
    browser.get(url)
    _ready(browser, "overview")
    rows = browser.find_elements(By.CSS_SELECTOR, "#overview-table tbody tr")
    assert [r.get_attribute("data-run") for r in rows] == ["bm25", "tfidf"]
    assert "paired randomization test" in browser.find_element(By.ID, "caption").text
    browser.find_element(By.CSS_SELECTOR, "#overview-table thead th:nth-child(2) button").click()  # sort by nDCG@10
    _ready(browser, "overview")
    assert "sort=nDCG%4010" in browser.current_url or "sort=nDCG@10" in browser.current_url
    _shot(browser, "overview")

    browser.find_element(By.ID, "nav-queries").click()
    _ready(browser, "queries")
    qrels = coll.qrels("test")
    table_rows = browser.find_elements(By.CSS_SELECTOR, "#query-table tbody tr")
    assert len(table_rows) == len({q.query_id for q in qrels})
    _shot(browser, "queries")
    qid = table_rows[0].get_attribute("data-qid")
    table_rows[0].click()
    _ready(browser, "query")
    assert browser.find_element(By.ID, "qid").text == qid
    _shot(browser, "query")

    runs = {t: Run.read(tmp / f"{t}.run") for t in ("bm25", "tfidf")}
    grades = {q.doc_id: q.relevance for q in qrels if q.query_id == qid}
    text = {q.query_id: q.text for q in coll.queries("test")}[qid].lower()
    for tag in ("bm25", "tfidf"):
        items = browser.find_elements(By.CSS_SELECTOR, f'ol[data-run="{tag}"] li')
        assert [i.get_attribute("data-doc") for i in items] == [d for d, _ in runs[tag].ranking[qid][:10]]
        for item in items:
            doc = item.get_attribute("data-doc")
            badge = item.find_element(By.CSS_SELECTOR, ".grade")
            if doc in grades:
                assert badge.get_attribute("data-grade") == str(grades[doc])
            else:
                assert badge.text == "unjudged"
            for mark in item.find_elements(By.TAG_NAME, "mark"):
                assert mark.text.lower() in text  # only the query's words are highlighted
    assert browser.find_elements(By.CSS_SELECTOR, "mark")  # and some are
    weights = browser.find_element(By.CSS_SELECTOR, 'table.weights[data-run="bm25"]')
    cells = [r.find_elements(By.TAG_NAME, "td") for r in weights.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert cells and all(c[2].text == c[3].text for c in cells)  # an untrained model: exactly the fixed prior
    for c in cells:  # each analyzed n-gram beside the query words it came from ("onlin" beside "online")
        assert all(w.lower() in text for w in c[1].text.split())
    assert "Fixed prior: the weight an n-gram has before training" in browser.find_element(By.TAG_NAME, "main").text
    assert _errors(browser) == []


def test_browser_follows_a_pasted_fragment_and_keys(browser, demo_report):
    from selenium.webdriver.common.by import By

    tmp, coll = demo_report
    qids = sorted({q.query_id for q in coll.qrels("test")})
    browser.get((tmp / "report.html").as_uri() + f"#/query/{qids[1]}?a=tfidf&b=bm25")
    _ready(browser, "query")
    assert browser.find_element(By.ID, "qid").text == qids[1]
    sections = [s.get_attribute("aria-label") for s in browser.find_elements(By.CSS_SELECTOR, ".side section")]
    assert sections == ["tfidf", "bm25"]
    order = browser.execute_script("return listOrder()")  # a pasted fragment: the default list (largest |Δ| first)
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    _shows(browser, "qid", order[order.index(qids[1]) + 1])
    _ready(browser, "query")
    browser.find_element(By.TAG_NAME, "body").send_keys("q")
    _ready(browser, "queries")
    browser.get((tmp / "report.html").as_uri() + "#/queries?run=tfidf&filter=losses")
    _ready(browser, "queries")
    for row in browser.find_elements(By.CSS_SELECTOR, "#query-table tbody tr"):
        assert row.text.split()[-3].startswith("−") or "loss" in row.text
    assert _errors(browser) == []


def test_browser_renders_markup_in_a_document_as_text(browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    (tmp_path / "x.html").write_text(_report(tmp_path), encoding="utf-8")
    browser.get((tmp_path / "x.html").as_uri() + "#/query/q1?a=a&b=b")
    _ready(browser, "query")
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    first = browser.find_element(By.CSS_SELECTOR, 'ol[data-run="a"] li[data-doc="d1"] .snippet')
    assert "<script>alert(1)</script>" in first.text and "onerror" in first.text
    assert browser.execute_script("return document.title") != "owned" and not browser.find_elements(By.CSS_SELECTOR, "main img")
    missing = browser.find_element(By.CSS_SELECTOR, 'ol[data-run="a"] li[data-doc="gone"]')
    assert "not in the collection's corpus" in missing.text
    assert "Болезнь" in browser.find_element(By.CSS_SELECTOR, 'li[data-doc="d2"] .snippet').text
    assert _errors(browser) == []


def test_glow_word_weights_for_the_query_view(tmp_path):
    """Where a run came from GLOW, the page shows the weight its attention gave each query word: BM25 in the query
    against the collection's statistics, mean 1 over the words the analyzer keeps (stop words 0.5)."""
    from irglow.data.collection import load_collection
    from irglow.data.records import Query
    from irglow.models.explain import glow_weights
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.models.glow.model import GlowConfig, GlowEncoder
    from tests.integration.pipelines import SMALL_DEMO

    coll = load_collection(SMALL_DEMO)
    index = build_index(coll, IndexConfig(threads=1), root=tmp_path / "data")
    GlowEncoder.from_pretrained_bert(GlowConfig(variant="glow", num_layers=1, fields=list(index.fields))).save(
        tmp_path / "glow")
    query = coll.queries("test")[0]
    w = glow_weights(tmp_path / "glow", index, CollectionStats.load(index), [Query(query.query_id, query.text + " the")])
    entry = w[query.query_id]
    assert entry["terms"][-1] == "the" and entry["weights"][-1] == 0.5  # a stop word
    content = [x for x in entry["weights"] if x != 0.5]  # the words the analyzer keeps (stop words: 0.5)
    assert content and sum(content) / len(content) == pytest.approx(1.0, abs=1e-3) and "GLOW's attention weights" in entry["label"]


def test_a_figure_made_later_joins_the_overview(browser, tmp_path):
    """Zero-shot draws its forest plot once every collection has run; each collection's page then shows it."""
    from selenium.webdriver.common.by import By

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from irglow.eval.report import add_images

    fig = plt.figure(figsize=(1, 1))
    fig.savefig(tmp_path / "f.png")
    plt.close(fig)
    page = tmp_path / "x.html"
    page.write_text(_report(tmp_path), encoding="utf-8")
    add_images(page, {"pooled effect (forest plot)": (tmp_path / "f.png").read_bytes()})
    browser.get(page.as_uri() + "#/overview")
    _ready(browser, "overview")
    images = browser.find_elements(By.CSS_SELECTOR, "main figure img")
    assert [i.get_attribute("alt") for i in images] == ["pooled effect (forest plot)"]
    assert browser.execute_script("return arguments[0].naturalWidth", images[0]) > 0 and _errors(browser) == []


def test_each_snippet_is_centred_on_its_own_querys_words():
    """Issue 37 item 5: one document shown for two queries gets two snippets, each around that query's word (a
    window chosen on every query's words centred a document on another query's "zebra")."""
    from irglow.eval.compare import compare
    from irglow.eval.report import report_data
    from irglow.runs.trec import Run

    class Coll:
        def docs_iter(self):
            yield make_document("d1", text="zebra stripes " + "filler " * 200 + "quantum entanglement of pairs")

    qrels = [Qrel("q1", "d1", 1), Qrel("q2", "d1", 1)]
    runs = {"a": Run({"q1": [("d1", 1.0)], "q2": [("d1", 1.0)]}, "a")}
    data = report_data(compare(runs, qrels, ["nDCG@10"]), runs, qrels, {"q1": "quantum entanglement",
                                                                         "q2": "zebra"}, Coll())
    detail = decode_details(data)[0]
    assert "quantum entanglement" in detail["q1"]["docs"]["d1"][1]
    assert "zebra" not in detail["q1"]["docs"]["d1"][1]
    assert detail["q2"]["docs"]["d1"][1].startswith("zebra stripes")


def test_queries_sort_by_rank_biased_overlap_and_tau_ap(browser, tmp_path):
    """Three queries whose rankings agree fully (q1), not at all (q2) and in part (q3, its first document new):
    sorted by RBO the page lists q2 (0.00), q3, q1 (1.00); by τ_AP q2 (−0.74: b's documents are all new, the
    reference's follow in order), q3 (−0.67), q1 (1.00), as tests/unit/test_contrast.py works them out."""
    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    def ranked(*docs):
        return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]

    runs = {"a": Run({"q1": ranked("d1", "d2", "d3"), "q2": ranked("d1", "d2", "d3"), "q3": ranked("d1", "d2", "d3")},
                     "a"),
            "b": Run({"q1": ranked("d1", "d2", "d3"), "q2": ranked("x1", "x2", "x3"), "q3": ranked("x1", "d2", "d3")},
                     "b")}
    qrels = [Qrel(q, "d1", 1) for q in ("q1", "q2", "q3")]
    page = tmp_path / "contrast.html"
    page.write_text(render(report_data(compare(runs, qrels, ["nDCG@10"], baseline="a"), runs, qrels,
                                       {"q1": "one", "q2": "two", "q3": "three"})), encoding="utf-8")
    for sort, expected in (("rbo", ["q2", "q3", "q1"]), ("tau", ["q2", "q3", "q1"])):
        browser.get(f"{page.as_uri()}#/queries?run=b&sort={sort}")
        _ready(browser, "queries")
        rows = browser.find_elements("css selector", "#query-table tbody tr")
        assert [r.get_attribute("data-qid") for r in rows] == expected
        cells = {r.get_attribute("data-qid"): [c.text for c in r.find_elements("css selector", "td")] for r in rows}
        assert cells["q1"][5:7] == ["1.00", "1.00"] and cells["q2"][5] == "0.00"
    headers = [h.text for h in browser.find_elements("css selector", "#query-table thead th")]
    assert headers[5:7] == ["RBO", "τ_AP"]
    assert _errors(browser) == []


def test_the_query_view_gives_real_ranks_and_a_summary_line(browser, tmp_path):
    """A document below a run's shown top (depth 2 here) is given its real rank there, not "new"; one line sums
    the query up (worked out by hand below)."""
    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    def ranked(*docs):
        return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]

    runs = {"a": Run({"q1": ranked("d1", "d2", "d3")}, "a"), "b": Run({"q1": ranked("d3", "d1", "d4", "d5", "d2")}, "b")}
    qrels = [Qrel("q1", "d1", 1), Qrel("q1", "d3", 2)]
    page = tmp_path / "ranks.html"
    page.write_text(render(report_data(compare(runs, qrels, ["nDCG@10"], baseline="a"), runs, qrels, {"q1": "q"},
                                       depth=2)), encoding="utf-8")
    browser.get(f"{page.as_uri()}#/query/q1?a=a&b=b")
    _ready(browser, "query")
    moves = {(ol.get_attribute("data-run"), li.get_attribute("data-doc")): li.find_element("css selector", ".move").text
             for ol in browser.find_elements("css selector", "ol[data-run]")
             for li in ol.find_elements("css selector", "li")}
    assert moves == {("a", "d1"): "▲ up 1 (rank 2 in b)", ("a", "d2"): "▲ up 3 (rank 5 in b)",
                     ("b", "d3"): "▲ up 2 (rank 3 in a)", ("b", "d1"): "▼ down 1 (rank 1 in a)"}
    text = browser.find_element("id", "query-summary").text
    assert "1 document(s) entered b's top 2, 1 left" in text and "first relevant: #1 in a, #1 in b" in text
    assert text.endswith("largest move: d3 from #3 to #1")
    assert _errors(browser) == []


def _navigation_page(tmp_path) -> Path:
    """Runs a, b, c over q1…q4; against a, b wins q2 and loses q1, q3, q4 (d1 relevant everywhere)."""
    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    def ranked(*docs):
        return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]

    a = {q: ranked("d1", "d2") for q in ("q1", "q3", "q4")} | {"q2": ranked("d2", "d1")}
    b = {q: ranked("d2", "d1") for q in ("q1", "q3", "q4")} | {"q2": ranked("d1", "d2")}
    runs = {"a": Run(a, "a"), "b": Run(b, "b"), "c": Run(a, "c")}
    qrels = [Qrel(q, "d1", 1) for q in ("q1", "q2", "q3", "q4")]
    texts = {"q1": "one", "q2": "two", "q3": "three", "q4": "four"}
    page = tmp_path / "nav.html"
    page.write_text(render(report_data(compare(runs, qrels, ["nDCG@10"], baseline="a"), runs, qrels, texts)),
                    encoding="utf-8")
    return page


def test_navigation_follows_the_filtered_sorted_list(browser, tmp_path):
    """j/k step through the list as filtered and sorted (losses of b by id: q1, q3, q4 — q2 skipped), q returns to
    it with its filter and sort, and the header's "Query view" opens the list's first query."""
    from selenium.webdriver.common.action_chains import ActionChains

    page = _navigation_page(tmp_path)
    browser.get(f"{page.as_uri()}#/queries?run=b&filter=losses&sort=id")
    _ready(browser, "queries")
    assert [r.get_attribute("data-qid") for r in browser.find_elements("css selector", "#query-table tbody tr")] == \
        ["q1", "q3", "q4"]
    assert "#/query/q1?" in browser.find_element("id", "nav-query").get_attribute("href")
    browser.find_element("css selector", "#query-table tbody tr").click()
    _ready(browser, "query")
    for key, expected in (("j", "q3"), ("j", "q4"), ("k", "q3")):
        ActionChains(browser).send_keys(key).perform()
        _shows(browser, "qid", expected)  # fails after 30 s if the key went elsewhere
        _ready(browser, "query")
    ActionChains(browser).send_keys("q").perform()
    _ready(browser, "queries")
    assert "filter=losses" in browser.current_url and "sort=id" in browser.current_url
    assert _errors(browser) == []


def test_search_narrows_as_one_types_and_left_is_never_right(browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    page = _navigation_page(tmp_path)
    browser.get(f"{page.as_uri()}#/queries?run=b")
    _ready(browser, "queries")
    browser.find_element("css selector", "input[type=search]").send_keys("thr")  # no Enter
    WebDriverWait(browser, 5).until(lambda d: [r.get_attribute("data-qid") for r in d.find_elements(
        "css selector", "#query-table tbody tr")] == ["q3"])
    browser.get(f"{page.as_uri()}#/query/q1?a=b&b=b")
    _ready(browser, "query")
    shown = [ol.get_attribute("data-run") for ol in browser.find_elements("css selector", "ol[data-run]")]
    assert shown[0] == "b" and shown[1] != "b"
    right = browser.find_element("css selector", "select[aria-label=right]")
    assert "b" not in [o.get_attribute("value") for o in right.find_elements("css selector", "option")]
    assert _errors(browser) == []


# -- issue 39: why a run wins, what it matched, a page that explains itself ------------------------------------
def _ranked(*docs):
    return [(d, float(len(docs) - i)) for i, d in enumerate(docs)]


def test_breakdown_figures_and_a_group_filters_the_query_list(browser, tmp_path):
    """Four queries of 1, 1, 3 and 3 words; against a (d1 first everywhere), b ties q1 and q2 and loses q3 (d1 at
    rank 2: nDCG@10 1/log2 3) and q4 (rank 3: 1/2).  The "3 words" group: mean Δ and its t interval computed here,
    one click lists q3 and q4 only."""
    from scipy import stats

    from irglow.eval.compare import compare
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    a = {q: _ranked("d1", "d2", "d3") for q in ("q1", "q2", "q3", "q4")}
    b = {"q1": _ranked("d1", "d2", "d3"), "q2": _ranked("d1", "d2", "d3"), "q3": _ranked("d2", "d1", "d3"),
         "q4": _ranked("d2", "d3", "d1")}
    runs = {"a": Run(a, "a"), "b": Run(b, "b")}
    qrels = [Qrel(q, "d1", 1) for q in a]
    texts = {"q1": "one", "q2": "two", "q3": "three long words", "q4": "four more words"}
    page = tmp_path / "why.html"
    page.write_text(render(report_data(compare(runs, qrels, ["nDCG@10"], baseline="a"), runs, qrels, texts)),
                    encoding="utf-8")
    deltas = [1 / math.log2(3) - 1, 0.5 - 1]
    mean = sum(deltas) / 2
    half = stats.t.ppf(0.975, 1) * abs(deltas[0] - deltas[1]) / math.sqrt(2) / math.sqrt(2)

    def signed(x):
        return ("+" if x >= 0 else "−") + f"{abs(x):.3f}"

    browser.get(f"{page.as_uri()}#/breakdown?run=b")
    _ready(browser, "breakdown")
    rows = {(r.get_attribute("data-char"), r.find_elements("css selector", "td")[1].text):
            [c.text for c in r.find_elements("css selector", "td")[2:]]
            for r in browser.find_elements("css selector", "#breakdown-table tbody tr")}
    assert rows[("length", "1")] == ["2", "+0.000", "[+0.000, +0.000]", "0", "0", "2"]
    assert rows[("length", "3")] == ["2", signed(mean), f"[{signed(mean - half)}, {signed(mean + half)}]", "0", "2",
                                     "0"]
    assert rows[("relevant", "1")][:2] == ["4", signed(sum(deltas) / 4)]
    # the baseline scores 1 on every query: one difficulty group holding all four
    assert [k for k in rows if k[0] == "difficulty:nDCG@10"] == [("difficulty:nDCG@10", "1.00")]
    browser.find_element("css selector", '#breakdown-table tr[data-char="length"][data-group="1"]').click()
    _ready(browser, "queries")
    assert [r.get_attribute("data-qid") for r in browser.find_elements("css selector", "#query-table tbody tr")] == \
        ["q4", "q3"]  # largest |Δ| first
    assert browser.find_element("id", "group-chip").text.startswith("query length: 3")
    assert _errors(browser) == []


@pytest.fixture(scope="module")
def dogs_page(module_tmp):
    """Two runs over a three-document collection whose words are stemmed variants of the query's."""
    from irglow.eval.compare import compare
    from irglow.eval.matching import TermMatcher
    from irglow.eval.report import render, report_data
    from irglow.index.lucene_index import IndexConfig, build_index
    from irglow.index.stats import CollectionStats
    from irglow.runs.trec import Run
    from tests.integration.test_matching import _Dogs

    tmp = module_tmp / "dogs-page"
    tmp.mkdir()
    coll = _Dogs()
    index = build_index(coll, IndexConfig(threads=1), root=tmp / "data")
    matcher = TermMatcher(index, CollectionStats.load(index), 0.9, 0.4)
    runs = {"a": Run({"q1": _ranked("d1", "d2", "d3")}, "a"), "b": Run({"q1": _ranked("d2", "d1")}, "b")}
    qrels = [Qrel("q1", "d1", 1), Qrel("q1", "d2", 0)]
    page = tmp / "dogs.html"
    page.write_text(render(report_data(compare(runs, qrels, ["nDCG@10"], baseline="a"), runs, qrels,
                                       {"q1": "Domestication of dogs"}, coll, matcher=matcher)), encoding="utf-8")
    return page, matcher


def test_highlighting_marks_stemmed_variants_shaded_by_bm25_and_never_stop_words(browser, dogs_page):
    page, matcher = dogs_page
    browser.get(f"{page.as_uri()}#/query/q1?a=a&b=b")
    _ready(browser, "query")
    d1 = browser.find_element("css selector", 'ol[data-run="a"] li[data-doc="d1"]')
    marks = [(m.text, m.get_attribute("data-term")) for m in d1.find_elements("css selector", "mark")]
    assert ("Domesticated", "domest") in marks and ("dogs", "dog") in marks and ("domestication", "domest") in marks
    every = {m.text.lower() for m in browser.find_elements("css selector", "main mark")}
    assert "of" not in every and "the" not in every
    # the shade: each mark's step is its term's BM25 in the document over the largest shown, in quarters
    bm25 = {d: matcher.contributions(d, ["domest", "dog"]) for d in ("d1", "d2", "d3")}
    top = max(v for c in bm25.values() for v in c.values())
    for m in d1.find_elements("css selector", ".snippet mark, .title mark"):
        step = max(1, math.ceil(4 * round(bm25["d1"][m.get_attribute("data-term")], 4) / round(top, 4)))
        assert m.get_attribute("class") == f"s{step}"
    assert "porter stemming, stop words removed" in browser.find_element("id", "legend").text
    d1.find_element("css selector", "button.open-doc").click()  # the document overlay: every field
    fields = {dd.get_attribute("data-field"): dd for dd in browser.find_elements("css selector", "#overlay dd")}
    assert set(fields) == {"title", "text"} and fields["text"].text == "The domestication of dogs is old."
    assert [m.text for m in fields["text"].find_elements("css selector", "mark")] == ["domestication", "dogs"]
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys("\ue00c").perform()  # Escape
    assert not browser.find_elements("id", "overlay")
    assert _errors(browser) == []


def test_overview_explains_itself_fits_1280_px_and_its_plot_opens_a_query(browser, tmp_path):
    from irglow.eval.compare import compare
    from irglow.eval.defaults import DEFAULT_MEASURES
    from irglow.eval.report import render, report_data
    from irglow.runs.trec import Run

    qids = [f"q{i}" for i in range(12)]
    base = {q: _ranked("d1", "d2", "d3") for q in qids}
    worse = {q: _ranked("d2", "d3", "d1") if i % 3 else _ranked("d1", "d2", "d3") for i, q in enumerate(qids)}
    better = {q: _ranked("d2", "d1", "d3") if i % 4 == 0 else _ranked("d1", "d2", "d3") for i, q in enumerate(qids)}
    runs = {"bm25": Run(base, "bm25"), "bm25-rm3-twbert-glow-hybrid": Run(worse, "x"),
            "glow-attention-row-weighted": Run(better, "y")}
    qrels = [Qrel(q, "d1", 1) for q in qids]
    cmp = compare(runs, qrels, list(DEFAULT_MEASURES), baseline="bm25", pairs="all", permutations=200, ci=True)
    page = tmp_path / "overview.html"
    page.write_text(render(report_data(cmp, runs, qrels, {q: "text " + q for q in qids})), encoding="utf-8")
    browser.set_window_size(1280, 1000)
    try:
        browser.get(f"{page.as_uri()}#/overview")
        _ready(browser, "overview")
        fits = browser.execute_script("const t = document.getElementById('overview-table'); "
                                      "return [t.scrollWidth, t.parentElement.clientWidth]")
        assert fits[0] <= fits[1], fits
        for th in browser.find_elements("css selector", "#overview-table tbody th"):
            assert th.value_of_css_property("white-space") == "nowrap"  # run names never broken
        caption = browser.find_element("id", "caption")
        assert "`" not in caption.text and caption.find_elements("css selector", "code")
        explained = browser.find_element("id", "explain").text
        assert "URisk" in explained and "TRisk" in explained and "Judged@10" in explained
        headers = [h.text for h in browser.find_elements("css selector", "#overview-table thead th")]
        assert headers[-1] == "group"  # --pairs all: the column the caption describes
        risk = {r.get_attribute("data-run"): r.find_element("css selector", 'td[data-col="TRisk(α=1)"]').text
                for r in browser.find_elements("css selector", "#risk-table tbody tr")}
        p = cmp.risk_p.loc["bm25-rm3-twbert-glow-hybrid", "TRisk(α=1)"]
        assert risk["bm25-rm3-twbert-glow-hybrid"].endswith(" *") == bool(p < cmp.alpha)
        # the plot opens on the best run (not the first non-baseline one), with a scale, and a bar opens its query
        picked = browser.find_element("css selector", "select[aria-label=run]").get_attribute("value")
        assert picked == "glow-attention-row-weighted"
        ticks = [t.text for t in browser.find_elements("css selector", "#diff-plot text.tick")]
        assert ticks[2] == "+0.00" and ticks[0].startswith("+") and ticks[-1].startswith("−")
        bar = browser.find_element("css selector", "#diff-plot rect.bar")
        qid = bar.get_attribute("data-qid")
        browser.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", bar)
        _ready(browser, "query")
        assert browser.find_element("id", "qid").text == qid
        assert _errors(browser) == []
    finally:
        browser.set_window_size(1400, 1000)


def test_a_filter_that_keeps_every_query_says_so_and_names_its_run(browser, tmp_path):
    page = _navigation_page(tmp_path)  # only d1 judged: every top 10 holds the unjudged d2
    browser.get(f"{page.as_uri()}#/queries?run=b&filter=unjudged")
    _ready(browser, "queries")
    chosen = browser.find_element("css selector", "select[aria-label=filter] option:checked").text
    assert chosen == "an unjudged document in b's top 10 (4)"
    assert "separates nothing" in browser.find_element("id", "filter-note").text
    browser.get(f"{page.as_uri()}#/queries?run=b&filter=losses")
    _ready(browser, "queries")
    assert not browser.find_elements("id", "filter-note")
    assert _errors(browser) == []
