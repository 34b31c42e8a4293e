package irglow;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TopFieldDocs;
import org.apache.lucene.search.TotalHits;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.document.Document;

import io.anserini.analysis.AnalyzerUtils;
import io.anserini.rerank.Reranker;
import io.anserini.rerank.RerankerCascade;
import io.anserini.rerank.RerankerContext;
import io.anserini.rerank.lib.Rm3Reranker;
import io.anserini.rerank.lib.ScoreTiesAdjusterReranker;
import io.anserini.search.ScoredDocs;
import io.anserini.search.SearchCollection;
import io.anserini.search.SimpleSearcher;
import io.anserini.search.query.QueryGenerator;

/**
 * Lucene hits in bulk for irglow: every query of a batch searched on a thread pool, the hits returned as
 * three primitive arrays (one JNI transfer each) instead of one Java object per hit.
 * Query i's hits are docs[offsets[i] .. offsets[i+1]) with their scores, in Lucene's order.
 */
public final class BulkSearch {
  public int[] offsets;
  public int[] docs;
  public float[] scores;

  /**
   * Anserini's tie-break sort (SimpleSearcher's BREAK_SCORE_TIES_BY_DOCID: score, then document id), built here:
   * reading Anserini's own field initialises SimpleSearcher, about a second of every lexical command's start.
   * {@link #tieBreakIsAnserinis()} checks that the two are equal (a test calls it).
   */
  static final Sort TIE_BREAK = new Sort(SortField.FIELD_SCORE, new SortField("id", SortField.Type.STRING_VAL));

  public static boolean tieBreakIsAnserinis() throws Exception {
    return TIE_BREAK.equals(field(SimpleSearcher.class, null, "BREAK_SCORE_TIES_BY_DOCID"));
  }

  private static final TopDocs NO_HITS = new TopDocs(new TotalHits(0, TotalHits.Relation.EQUAL_TO), new ScoreDoc[0]);

  public static BulkSearch search(IndexSearcher searcher, Query[] queries, int k, int threads) throws Exception {
    return pack(searchAll(searcher, queries, k, threads));
  }

  /** Every query's top {@code k} (a null query: no hits), searched on {@code threads} threads. */
  private static List<ScoredDocs> searchAll(IndexSearcher searcher, Query[] queries, int k, int threads)
      throws Exception {
    return searchAll(searcher, queries, k, threads, false);
  }

  /** {@code anserini}: Anserini's top k and scores (see {@link #anseriniTop}), else Lucene's. */
  private static List<ScoredDocs> searchAll(IndexSearcher searcher, Query[] queries, int k, int threads,
                                            boolean anserini) throws Exception {
    if (anserini) {
      Sort tieBreak = TIE_BREAK;
      List<Callable<ScoredDocs>> tasks = new ArrayList<>();
      for (Query q : queries) {
        tasks.add(() -> anseriniTop(searcher, q, k, tieBreak));
      }
      return runAll(tasks, threads);
    }
    List<Callable<TopDocs>> tasks = new ArrayList<>();
    for (Query q : queries) {
      tasks.add(() -> q == null ? null : searcher.search(q, k));
    }
    return hitsOf(runAll(tasks, threads));
  }

  /**
   * A query's top k as Anserini's SimpleSearcher returns them (what Pyserini writes and its published figures
   * are computed from): equal scores broken by document id ascending (its BREAK_SCORE_TIES_BY_DOCID sort, which
   * also decides which tied documents make the top k), then its ScoreTiesAdjusterReranker, which rounds each
   * score to 4 decimals and lowers the i-th of a run of equal scores by i * 1e-6, so that trec_eval keeps the
   * order.  Nothing of a stored document is loaded.
   */
  private static ScoredDocs anseriniTop(IndexSearcher searcher, Query q, int k, Sort tieBreak) throws Exception {
    if (q == null) return hitsOnly(NO_HITS);
    ScoredDocs docs = hitsOnly(searcher.search(q, k, tieBreak, true));
    return new ScoreTiesAdjusterReranker<Object>().rerank(docs, null);
  }

  /** Lucene's results as hits only (a null result: no hits), nothing of a stored document loaded. */
  private static List<ScoredDocs> hitsOf(List<TopDocs> results) {
    List<ScoredDocs> hits = new ArrayList<>();
    for (TopDocs top : results) {
      hits.add(hitsOnly(top == null ? NO_HITS : top));
    }
    return hits;
  }

  /**
   * trec_eval's tie order for an index: the rank of each Lucene document's id among all ids in code point order
   * (the order of their UTF-8 bytes, which is Python's string order), written with the index by irglow's id table
   * (irglow/index/id_table.py) and read by {@link #loadTieOrder}.
   */
  public static final class TieOrder {
    final int[] rank;

    TieOrder(int[] rank) {
      this.rank = rank;
    }

    public int size() {
      return rank.length;
    }
  }

  /**
   * The tie order irglow wrote beside the index (``irglow-ids/tie-rank.npy``: a NumPy file of little-endian int32,
   * one rank per Lucene document), read at memory speed: no pass over the stored ids in any process.
   */
  public static TieOrder loadTieOrder(String path) throws Exception {
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(java.nio.file.Paths.get(path),
        java.nio.file.StandardOpenOption.READ)) {
      ByteBuffer buf = ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, ch.size())
          .order(ByteOrder.LITTLE_ENDIAN);
      int major = buf.get(6);
      int headerLength = major == 1 ? (buf.getShort(8) & 0xffff) : buf.getInt(8);
      int start = (major == 1 ? 10 : 12) + headerLength;
      buf.position(start);
      int[] rank = new int[(int) ((ch.size() - start) / 4)];
      buf.asIntBuffer().get(rank);
      return new TieOrder(rank);
    }
  }

  /**
   * Hits in trec_eval's order and packed for one transfer: each query's hits by score descending, equal scores
   * by document id descending (Lucene breaks them by doc number), then every query's hits in one little-endian
   * byte array — [queries] [offsets: queries + 1] [doc numbers] [float scores] [extra: queries] — which Python
   * reads with numpy as it is, neither converting hit by hit nor sorting again.  {@code extra}: one int per
   * query the caller wants back (the number of analyzed terms where Java analyzed the text; else 0).
   */
  static byte[] packOrdered(List<ScoredDocs> hits, TieOrder order, int[] extra) {
    int q = hits.size();
    int total = 0;
    for (ScoredDocs h : hits) total += h.lucene_docids.length;
    ByteBuffer out = ByteBuffer.allocate(4 * (1 + (q + 1) + 2 * total + q)).order(ByteOrder.LITTLE_ENDIAN);
    out.putInt(q);
    int at = 0;
    for (ScoredDocs h : hits) {
      out.putInt(at);
      at += h.lucene_docids.length;
    }
    out.putInt(at);
    List<int[]> orders = new ArrayList<>();
    for (ScoredDocs h : hits) {
      int[] idx = tieOrdered(h, order);
      orders.add(idx);
      for (int i : idx) out.putInt(h.lucene_docids[i]);
    }
    for (int j = 0; j < q; j++) {
      ScoredDocs h = hits.get(j);
      for (int i : orders.get(j)) out.putFloat(h.scores[i]);
    }
    for (int j = 0; j < q; j++) out.putInt(extra == null ? 0 : extra[j]);
    return out.array();
  }

  /** Positions of a query's hits in trec_eval's order: by score descending, ties by id rank descending. */
  private static int[] tieOrdered(ScoredDocs h, TieOrder order) {
    int n = h.lucene_docids.length;
    int[] idx = new int[n];
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++) {
      if (h.scores[i] > h.scores[i - 1]) {  // not in score order (a reranker's output): sort it all
        Integer[] all = new Integer[n];
        for (int j = 0; j < n; j++) all[j] = j;
        Arrays.sort(all, (a, b) -> h.scores[a] != h.scores[b] ? Float.compare(h.scores[b], h.scores[a])
            : Integer.compare(order.rank[h.lucene_docids[b]], order.rank[h.lucene_docids[a]]));
        for (int j = 0; j < n; j++) idx[j] = all[j];
        return idx;
      }
    }
    int start = 0;
    while (start < n) {  // Lucene returns scores in descending order: only runs of equal scores move
      int end = start + 1;
      while (end < n && h.scores[end] == h.scores[start]) end++;
      if (end - start > 1) {
        Integer[] run = new Integer[end - start];
        for (int i = start; i < end; i++) run[i - start] = i;
        Arrays.sort(run, (a, b) -> Integer.compare(order.rank[h.lucene_docids[b]], order.rank[h.lucene_docids[a]]));
        for (int i = start; i < end; i++) idx[i] = run[i - start];
      }
      start = end;
    }
    return idx;
  }

  /** {@link #search}'s hits, in trec_eval's order and packed (see {@link #packOrdered}). */
  public static byte[] searchPacked(IndexSearcher searcher, Query[] queries, int k, int threads, TieOrder order,
                                    boolean anserini) throws Exception {
    return packOrdered(searchAll(searcher, queries, k, threads, anserini), order, null);
  }

  /**
   * Bag-of-words search from the query texts in one call: each text analyzed (the index's analyzer), its
   * distinct terms boosted by their counts (Anserini's BagOfWordsQueryGenerator, as {@link #bagOfWords}),
   * searched, in trec_eval's order and packed; {@code extra} holds each text's number of analyzed terms (0: an
   * empty ranking, which Python reports).
   */
  public static byte[] searchTextsPacked(IndexSearcher searcher, Analyzer analyzer, String field, String[] texts,
                                         int k, int threads, TieOrder order, boolean anserini)
      throws Exception {
    int[] counts = new int[texts.length];
    Sort tieBreak = TIE_BREAK;
    List<Callable<ScoredDocs>> tasks = new ArrayList<>();
    for (int i = 0; i < texts.length; i++) {
      final int at = i;
      final String text = texts[i];
      tasks.add(() -> {
        List<String> terms = text.trim().isEmpty() ? List.of() : AnalyzerUtils.analyze(analyzer, text);
        counts[at] = terms.size();
        if (terms.isEmpty()) return hitsOnly(NO_HITS);
        Map<String, Integer> tf = new LinkedHashMap<>();
        for (String t : terms) tf.merge(t, 1, Integer::sum);
        String[] distinct = tf.keySet().toArray(new String[0]);
        float[] boosts = new float[distinct.length];
        for (int j = 0; j < distinct.length; j++) boosts[j] = tf.get(distinct[j]);
        Query q = bagOfWords(field, distinct, boosts);
        return anserini ? anseriniTop(searcher, q, k, tieBreak) : hitsOnly(searcher.search(q, k));
      });
    }
    return packOrdered(runAll(tasks, threads), order, counts);
  }

  /** Each query's hits, one after the other, as three arrays. */
  private static BulkSearch pack(List<ScoredDocs> hits) {
    BulkSearch out = new BulkSearch();
    out.offsets = new int[hits.size() + 1];
    int total = 0;
    for (int i = 0; i < hits.size(); i++) {
      out.offsets[i] = total;
      total += hits.get(i).lucene_docids.length;
    }
    out.offsets[hits.size()] = total;
    out.docs = new int[total];
    out.scores = new float[total];
    for (int i = 0; i < hits.size(); i++) {
      ScoredDocs r = hits.get(i);
      System.arraycopy(r.lucene_docids, 0, out.docs, out.offsets[i], r.lucene_docids.length);
      System.arraycopy(r.scores, 0, out.scores, out.offsets[i], r.scores.length);
    }
    return out;
  }

  /** Every task, in order: on a pool of {@code threads} threads, or on this one. */
  static <T> List<T> runAll(List<Callable<T>> tasks, int threads) throws Exception {
    List<T> out = new ArrayList<>();
    if (threads <= 1 || tasks.size() < 2) {
      for (Callable<T> t : tasks) out.add(t.call());
      return out;
    }
    ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, tasks.size()));
    try {
      for (Future<T> f : pool.invokeAll(tasks)) out.add(f.get());
    } finally {
      pool.shutdown();
    }
    return out;
  }

  /**
   * Anserini's bag-of-words query in one call: a SHOULD clause per distinct term, wrapped in a BoostQuery
   * where its boost (the term's count in the query) is not 1 — the query irglow builds clause by clause.
   */
  public static Query bagOfWords(String field, String[] terms, float[] boosts) {
    if (terms.length + 1 > IndexSearcher.getMaxClauseCount()) {
      IndexSearcher.setMaxClauseCount(terms.length + 1);
    }
    BooleanQuery.Builder builder = new BooleanQuery.Builder();
    for (int i = 0; i < terms.length; i++) {
      Query q = new TermQuery(new Term(field, new BytesRef(terms[i])));
      builder.add(boosts[i] != 1.0f ? new BoostQuery(q, boosts[i]) : q, BooleanClause.Occur.SHOULD);
    }
    return builder.build();
  }

  /** Lucene alone, the ceiling for the benchmarks: the same searches, hits counted but never read out. */
  public static long searchOnly(IndexSearcher searcher, Query[] queries, int k, int threads) throws Exception {
    BulkSearch hits = search(searcher, queries, k, threads);
    return hits.docs.length;
  }

  /**
   * Each document's length in {@code field} (its analyzed tokens: the sum of its terms' frequencies, what its term
   * vector would say), read from the postings in one pass, as little-endian int32 in doc-number order: the exact
   * lengths of fields stored without document vectors.
   */
  public static byte[] fieldLengths(IndexReader reader, String field) throws Exception {
    int[] out = new int[reader.maxDoc()];
    for (org.apache.lucene.index.LeafReaderContext leaf : reader.leaves()) {
      org.apache.lucene.index.Terms terms = leaf.reader().terms(field);
      if (terms == null) continue;
      org.apache.lucene.index.TermsEnum it = terms.iterator();
      org.apache.lucene.index.PostingsEnum postings = null;
      while (it.next() != null) {
        postings = it.postings(postings, org.apache.lucene.index.PostingsEnum.FREQS);
        int d;
        while ((d = postings.nextDoc()) != org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS) {
          out[leaf.docBase + d] += postings.freq();
        }
      }
    }
    ByteBuffer buf = ByteBuffer.allocate(4 * out.length).order(ByteOrder.LITTLE_ENDIAN);
    buf.asIntBuffer().put(out);
    return buf.array();
  }

  /** Every document's stored field {@code field}, in Lucene doc order, joined by newlines (one transfer). */
  public static String storedField(IndexReader reader, String field) throws Exception {
    StoredFields stored = reader.storedFields();
    StringBuilder sb = new StringBuilder();
    int n = reader.maxDoc();
    for (int i = 0; i < n; i++) {
      String v = stored.document(i).get(field);
      sb.append(v == null ? "" : v);
      if (i + 1 < n) sb.append('\n');
    }
    return sb.toString();
  }

  /**
   * Pyserini's {@code batch_search} (with {@code fields}: {@code batch_search_fields}; after {@code set_rm3}: RM3)
   * with its hits in bulk: the same query generator, first-stage search and the searcher's own reranker
   * cascade (Anserini's Rm3Reranker builds the expanded query, its ScoreTiesAdjusterReranker rounds the
   * scores), but the final k hits are taken as Lucene doc numbers instead of k stored documents loaded and
   * wrapped as objects — which is what Pyserini spends its time on at depth 1000.  Any other reranker in the
   * cascade: an exception, and irglow falls back to Pyserini.  The hits leave in trec_eval's order and packed
   * (see {@link #packOrdered}).
   */
  public static byte[] pyseriniPacked(SimpleSearcher ss, String[] texts, java.util.Map<String, Float> fields, int k,
                                      int threads, TieOrder order) throws Exception {
    Analyzer analyzer = (Analyzer) field(SimpleSearcher.class, ss, "analyzer");
    IndexReader reader = (IndexReader) field(SimpleSearcher.class, ss, "reader");
    QueryGenerator generator = (QueryGenerator) field(SimpleSearcher.class, ss, "generator");
    boolean lucene8 = (Boolean) field(SimpleSearcher.class, ss, "backwardsCompatibilityLucene8");
    Sort tieBreak = TIE_BREAK;
    RerankerCascade<?> cascade = (RerankerCascade<?>) field(SimpleSearcher.class, ss, "cascade");
    @SuppressWarnings("unchecked")
    List<Reranker<Object>> rerankers = (List<Reranker<Object>>) field(RerankerCascade.class, cascade, "rerankers");
    for (Reranker<Object> r : rerankers) {
      if (!(r instanceof Rm3Reranker) && !(r instanceof ScoreTiesAdjusterReranker)) {
        throw new UnsupportedOperationException("reranker " + r.getClass().getName() + " needs stored documents");
      }
    }
    boolean rm3 = ss.use_rm3();
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setSimilarity(ss.get_similarity());
    List<Callable<ScoredDocs>> tasks = new ArrayList<>();
    for (String text : texts) {
      tasks.add(() -> searchOne(searcher, reader, analyzer, generator, fields, rerankers, rm3, tieBreak, lucene8,
                                text, k));
    }
    return packOrdered(runAll(tasks, threads), order, null);
  }

  // SimpleSearcher.search(String, int) / search_fields(…) → _search, step for step
  private static ScoredDocs searchOne(IndexSearcher searcher, IndexReader reader, Analyzer analyzer,
                                      QueryGenerator generator, java.util.Map<String, Float> fields,
                                      List<Reranker<Object>> rerankers, boolean rm3, Sort tieBreak, boolean lucene8,
                                      String text, int k) throws Exception {
    Query query = fields == null || fields.isEmpty() ? generator.buildQuery("contents", analyzer, text)
                                                     : generator.buildQuery(fields, analyzer, text);
    List<String> tokens = AnalyzerUtils.analyze(analyzer, text);
    SearchCollection.Args args = new SearchCollection.Args();
    args.arbitraryScoreTieBreak = lucene8;
    args.hits = k;
    int n = rm3 ? args.rerankcutoff : k;
    TopDocs first = lucene8 ? searcher.search(query, n) : searcher.search(query, n, tieBreak, true);
    Recording recording = new Recording(reader);
    RerankerContext<Object> context = new RerankerContext<>(recording, null, query, null, text, tokens, null, args);
    // RM3 reads its feedback documents; without it nothing downstream reads a stored document
    ScoredDocs docs = rm3 ? ScoredDocs.fromTopDocs(first, searcher) : hitsOnly(first);
    for (Reranker<Object> r : rerankers) {
      recording.query = null;
      ScoredDocs next = r.rerank(docs, context);
      if (recording.query != null) {  // the reranker's own search, replayed on the real searcher
        next = hitsOnly(recording.sort == null ? searcher.search(recording.query, recording.n)
                                               : searcher.search(recording.query, recording.n, recording.sort, true));
      }
      docs = next;
    }
    return docs;
  }

  private static ScoredDocs hitsOnly(TopDocs hits) {
    ScoredDocs docs = new ScoredDocs();
    int n = hits.scoreDocs.length;
    docs.lucene_docids = new int[n];
    docs.scores = new float[n];
    docs.lucene_documents = new Document[n];  // never loaded: only their count is read downstream
    for (int i = 0; i < n; i++) {
      docs.lucene_docids[i] = hits.scoreDocs[i].doc;
      docs.scores[i] = hits.scoreDocs[i].score;
    }
    return docs;
  }

  /** A searcher that records the one search a reranker makes and answers it with no hits. */
  private static final class Recording extends IndexSearcher {
    Query query;
    int n;
    Sort sort;

    Recording(IndexReader reader) {
      super(reader);
    }

    @Override
    public TopDocs search(Query q, int n) {
      this.query = q;
      this.n = n;
      this.sort = null;
      return NO_HITS;
    }

    @Override
    public TopFieldDocs search(Query q, int n, Sort sort, boolean doDocScores) {
      this.query = q;
      this.n = n;
      this.sort = sort;
      return new TopFieldDocs(new TotalHits(0, TotalHits.Relation.EQUAL_TO), new ScoreDoc[0], sort.getSort());
    }
  }

  private static Object field(Class<?> owner, Object target, String name) throws Exception {
    java.lang.reflect.Field f = owner.getDeclaredField(name);
    f.setAccessible(true);
    return f.get(target);
  }
}
