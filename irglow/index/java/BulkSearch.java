package irglow;

import java.util.ArrayList;
import java.util.List;
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

/**
 * Lucene hits in bulk for irglow: every query of a batch searched on a thread pool, the hits returned as
 * three primitive arrays (one JNI transfer each) instead of one Java object per hit.
 * Query i's hits are docs[offsets[i] .. offsets[i+1]) with their scores, in Lucene's order.
 */
public final class BulkSearch {
  public int[] offsets;
  public int[] docs;
  public float[] scores;

  public static BulkSearch search(IndexSearcher searcher, Query[] queries, int k, int threads) throws Exception {
    TopDocs[] tops = new TopDocs[queries.length];
    if (threads <= 1 || queries.length < 2) {
      for (int i = 0; i < queries.length; i++) {
        tops[i] = queries[i] == null ? null : searcher.search(queries[i], k);
      }
    } else {
      ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, queries.length));
      try {
        List<Future<TopDocs>> futures = new ArrayList<>();
        for (Query q : queries) {
          futures.add(q == null ? null : pool.submit(() -> searcher.search(q, k)));
        }
        for (int i = 0; i < queries.length; i++) {
          tops[i] = futures.get(i) == null ? null : futures.get(i).get();
        }
      } finally {
        pool.shutdown();
      }
    }
    BulkSearch out = new BulkSearch();
    out.offsets = new int[queries.length + 1];
    int total = 0;
    for (int i = 0; i < queries.length; i++) {
      out.offsets[i] = total;
      total += tops[i] == null ? 0 : tops[i].scoreDocs.length;
    }
    out.offsets[queries.length] = total;
    out.docs = new int[total];
    out.scores = new float[total];
    for (int i = 0; i < queries.length; i++) {
      if (tops[i] == null) continue;
      int at = out.offsets[i];
      for (ScoreDoc sd : tops[i].scoreDocs) {
        out.docs[at] = sd.doc;
        out.scores[at] = sd.score;
        at++;
      }
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
}
