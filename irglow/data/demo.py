"""The embedded demo collection: generated deterministically by irglow's own code, no third-party text.

It imitates a small web collection (title, url, body, multi-instance anchors, with some
fields missing) and is built so that the things irglow studies visibly matter:

* **rare topical words**: each topic owns a few words that occur almost nowhere else;
* **term weighting**: topic *names* are two words drawn from small shared pools, so each
  name word alone is ambiguous (it names several topics) and only the pair (the bi-gram)
  identifies a topic; queries also carry generic web words ("guide", "online") that match
  everywhere;
* **field choice**: highly relevant pages carry the topic in title and anchors, while
  "roundup" pages mention many topics' words in their bodies only, repeatedly;
* **length normalisation**: bodies range from a dozen to a few hundred words, and a few
  pages are over-long (thousands of words) on purpose.

Qrels are graded: 2 = page about the topic (title/anchor), 1 = page mentioning the topic
in passing, 0 = judged non-relevant (roundup pages that match the words).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property

from irglow.data.records import Document, Qrel, Query, make_document
from irglow.defaults import SEED
from irglow.utils.digest import value_digest

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "gr", "kl", "st", "tr", "sk"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "k", "m"]
_ACCENTED = ["é", "ö", "ü", "å"]
_STOP = ["the", "of", "and", "to", "in", "for", "with", "on", "a", "is"]
_GENERIC = ["guide", "online", "best", "page", "info", "review", "official", "news", "free", "home"]
_LUCENE_STOPWORDS = {
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
    "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
    "will", "with",
}


DEMO_GENERATOR_VERSION = 1  # raise when the generator's output changes for the same settings


@dataclass(frozen=True)
class DemoConfig:
    seed: int = SEED
    n_topics: int = 200
    docs_per_topic: int = 12
    n_roundups: int = 500
    n_background: int = 300
    queries_per_topic: int = 2
    test_fraction: float = 0.25
    name_pool: int = 36

    def __post_init__(self):
        """Refuse what the generator cannot make, before it loops forever or fails deep inside: every topic needs
        its own (name_a, name_b) pair, roundup pages cover 3 topics, and both splits need a topic."""
        import math

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ValueError(f"demo collection: {what}")

        for key, least in (("n_topics", 1), ("docs_per_topic", 1), ("n_roundups", 0), ("n_background", 0),
                           ("queries_per_topic", 1), ("name_pool", 1)):
            value = getattr(self, key)
            need(isinstance(value, int) and value >= least, f"{key}={value!r} must be an integer >= {least}")
        need(self.name_pool <= 100_000, f"name_pool={self.name_pool} must be <= 100000 (the two-syllable words run out)")
        need(self.name_pool ** 2 >= self.n_topics, f"name_pool={self.name_pool} gives {self.name_pool ** 2} distinct "
                                                   f"name pairs, fewer than n_topics={self.n_topics}; raise name_pool "
                                                   f"to at least {math.isqrt(self.n_topics - 1) + 1}")
        need(self.n_roundups == 0 or self.n_topics >= 3, f"n_topics={self.n_topics}: roundup pages cover 3 topics "
                                                          f"(n_topics >= 3, or n_roundups=0)")
        tf = self.test_fraction
        need(isinstance(tf, (int, float)) and math.isfinite(tf) and 0 < tf < 1,
             f"test_fraction={tf!r} must be a number between 0 and 1")
        n_test = int(round(self.n_topics * tf))
        need(0 < n_test < self.n_topics, f"test_fraction={tf} of n_topics={self.n_topics} leaves "
                                         f"{'no test' if n_test == 0 else 'no training'} topic")


class DemoCollection:
    """A deterministic multi-field web-like collection; ``splits``: ``train`` and ``test``."""

    fields = ("title", "url", "body", "anchor")

    def __init__(self, config: DemoConfig | None = None):
        self.config = config or DemoConfig()
        c = self.config
        # every generator setting (and the generator's version) is in the name, which keys the index cache
        from dataclasses import asdict

        settings = value_digest({"generator": DEMO_GENERATOR_VERSION, **asdict(c)})[:8]
        self.name = f"demo-s{c.seed}-t{c.n_topics}-d{c.docs_per_topic}-r{c.n_roundups}-b{c.n_background}-{settings}"

    # -- vocabulary -------------------------------------------------------------------------
    @cached_property
    def _vocab(self) -> dict[str, list[str]]:
        rng = random.Random(self.config.seed)
        seen: set[str] = set(_GENERIC) | _LUCENE_STOPWORDS

        def word(syllables: int) -> str:
            while True:
                w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))
                # Porter would merge words differing only in a trailing s; keep stems distinct.
                key = w.rstrip("s")
                if key not in seen and len(w) >= 4:
                    seen.add(key)
                    return w

        c = self.config
        vocab = {
            "common": [word(2) for _ in range(300)],
            "name_a": [word(2) for _ in range(c.name_pool)],
            "name_b": [word(3) for _ in range(c.name_pool)],
            "rare": [word(3) for _ in range(3 * c.n_topics)],
            "sites": [word(2) for _ in range(40)],
        }
        # a few words with non-ASCII letters, so unicode flows through every stage
        vocab["rare"][:12] = [w[:-1] + rng.choice(_ACCENTED) + w[-1] for w in vocab["rare"][:12]]
        return vocab

    @cached_property
    def _topics(self) -> list[dict]:
        rng = random.Random(self.config.seed + 1)
        v = self._vocab
        pairs: set[tuple[int, int]] = set()
        topics = []
        for t in range(self.config.n_topics):
            while True:
                pair = (rng.randrange(len(v["name_a"])), rng.randrange(len(v["name_b"])))
                if pair not in pairs:
                    pairs.add(pair)
                    break
            topics.append({
                "a": v["name_a"][pair[0]],
                "b": v["name_b"][pair[1]],
                "rare": v["rare"][3 * t: 3 * t + 3],
                "site": rng.choice(v["sites"]),
            })
        return topics

    @cached_property
    def _common_cum_weights(self) -> list[float]:
        total, cum = 0.0, []
        for r in range(len(self._vocab["common"])):
            total += 1.0 / (r + 8)
            cum.append(total)
        return cum

    def _background(self, rng: random.Random, n: int) -> list[str]:
        common = self._vocab["common"]
        cum = self._common_cum_weights
        out = []
        for _ in range(n):
            r = rng.random()
            if r < 0.25:
                out.append(rng.choice(_STOP))
            elif r < 0.30:
                out.append(rng.choice(_GENERIC))
            else:  # Zipf-like: low ranks far more frequent
                out.append(rng.choices(common, cum_weights=cum)[0])
        return out

    # -- documents -----------------------------------------------------------------------------
    @cached_property
    def _docs_and_qrels(self) -> tuple[list[Document], dict[int, dict[str, int]]]:
        c = self.config
        rng = random.Random(c.seed + 2)
        docs: list[Document] = []
        judged: dict[int, dict[str, int]] = {t: {} for t in range(c.n_topics)}
        for t, topic in enumerate(self._topics):
            name = f"{topic['a']} {topic['b']}"
            for j in range(c.docs_per_topic):
                doc_id = f"t{t:03d}d{j:02d}"
                kind = "core" if j < c.docs_per_topic // 3 else "passing"
                n_body = rng.choice([12, 30, 60, 120, 250])
                body = self._background(rng, n_body)
                if kind == "core":
                    inserts = [name] * rng.randint(1, 3) + rng.sample(topic["rare"], 2)
                else:
                    inserts = [name] + rng.sample(topic["rare"], 1)
                for ins in inserts:
                    body.insert(rng.randrange(len(body) + 1), ins)
                if j == 0 and t % 50 == 0:  # an over-long page, on purpose
                    body += self._background(rng, 6000)
                slug = "-".join(self._background(rng, 2)).replace(" ", "-")
                if kind == "core":
                    title = f"{name} {rng.choice(topic['rare'])} {rng.choice(_GENERIC)}"
                    anchors = [f"{name}" if rng.random() < 0.5 else f"{topic['a']} {topic['b']} {rng.choice(_GENERIC)}"
                               for _ in range(rng.randint(1, 3))]
                    url = f"https://www.{topic['site']}.com/{topic['a']}-{topic['b']}/{slug}"
                    grade = 2
                else:
                    title = " ".join(self._background(rng, 4)) if rng.random() < 0.7 else None
                    anchors = [" ".join(self._background(rng, 3))] if rng.random() < 0.3 else []
                    url = f"https://www.{rng.choice(self._vocab['sites'])}.org/{slug}" if rng.random() < 0.8 else None
                    grade = 1
                docs.append(make_document(doc_id, title=title, url=url, body=" ".join(body), anchor=anchors))
                judged[t][doc_id] = grade
        # roundup pages: many topics' name words (not adjacent) and rare words, in the body only
        for r in range(c.n_roundups):
            doc_id = f"r{r:04d}"
            body = self._background(rng, rng.choice([40, 80, 160]))
            covered = rng.sample(range(c.n_topics), 3)
            for t in covered:
                topic = self._topics[t]
                for w in [topic["a"], topic["b"], topic["a"], topic["b"], rng.choice(topic["rare"])]:
                    body.insert(rng.randrange(len(body) + 1), w)
                judged[t][doc_id] = 0
            title = " ".join(self._background(rng, 3) + [rng.choice(_GENERIC)])
            docs.append(make_document(doc_id, title=title, url=f"https://lists.{rng.choice(self._vocab['sites'])}.net/{r}",
                                      body=" ".join(body)))
        for b in range(c.n_background):
            doc_id = f"b{b:04d}"
            docs.append(make_document(doc_id, title=" ".join(self._background(rng, 4)) if b % 3 else None,
                                      body=" ".join(self._background(rng, rng.choice([20, 50, 100])))))
        # one empty page and one page that is only stopwords: indexed as "empty" by Lucene
        docs.append(make_document("e0000", url="https://empty.example/"))
        docs.append(make_document("e0001", body="the of and to in"))
        return docs, judged

    def docs_iter(self):
        yield from self._docs_and_qrels[0]

    def docs_count(self) -> int:
        return len(self._docs_and_qrels[0])

    # -- queries and qrels ------------------------------------------------------------------------
    @cached_property
    def _queries(self) -> dict[str, list[tuple[Query, int]]]:
        c = self.config
        rng = random.Random(c.seed + 3)
        order = list(range(c.n_topics))
        rng.shuffle(order)
        n_test = int(round(c.n_topics * c.test_fraction))
        split_of = {t: ("test" if i < n_test else "train") for i, t in enumerate(order)}
        out: dict[str, list[tuple[Query, int]]] = {"train": [], "test": []}
        for t, topic in enumerate(self._topics):
            templates = [
                lambda: f"{topic['a']} {topic['b']} {rng.choice(_GENERIC)}",
                lambda: f"the {topic['a']} {topic['b']} {rng.choice(topic['rare'])} {rng.choice(_GENERIC)} {rng.choice(_GENERIC)}",
                lambda: f"{rng.choice(_GENERIC)} {topic['a']} {topic['b']} in {self._vocab['common'][rng.randrange(5)]}",
            ]
            for k in range(c.queries_per_topic):
                q = Query(f"q{t:03d}{k}", templates[(t + k) % len(templates)]())
                out[split_of[t]].append((q, t))
        return out

    splits = ("train", "test")

    def queries(self, split: str) -> list[Query]:
        return [q for q, _ in self._queries[self._check(split)]]

    def qrels(self, split: str) -> list[Qrel]:
        judged = self._docs_and_qrels[1]
        return [Qrel(q.query_id, d, g) for q, t in self._queries[self._check(split)] for d, g in sorted(judged[t].items())]

    def _check(self, split: str) -> str:
        if split not in self._queries:
            raise KeyError(f"demo collection has splits {list(self._queries)}, not {split!r}")
        return split
