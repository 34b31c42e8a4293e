package irglow;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.List;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.Term;

import io.anserini.analysis.AnalyzerUtils;

/**
 * GLOW's word statistics for a batch of documents, in one call: what irglow's Python featurizer (the reference,
 * {@code irglow/models/glow/weights.py}) computes word by word.
 *
 * <p>Words are split as Python's {@code re.findall(r"\w+|[^\w\s]")} splits them (URLs: runs of Python-alphanumeric
 * characters), with Python's own character classes, passed in as a table over every code point (so the two
 * agree on the Unicode version of the Python that runs).  Each word is analyzed alone (its first analyzed term,
 * as {@code LuceneIndex.analyze}; a word with no letter or digit is dropped unanalyzed), remembered per instance;
 * with no analyzer (an encoder without weights), words only.
 *
 * <p>Per field segment (the texts of one field of one document, concatenated): its content length (words whose
 * analysis keeps a term), its first {@code keep} words with each word's term, and each such term's frequency in
 * every segment of the same document, and its document frequency in the index's {@code contents}.  Only counts
 * leave Java: the weights are computed in Python with the reference's arithmetic.
 */
public final class WordStats {
  static final byte OTHER = 0, ALNUM = 1, UNDERSCORE = 2, SPACE = 3;
  static final int DROPPED = -1;

  private final Analyzer analyzer;
  private final IndexReader reader;
  private final byte[] classes;
  private final int limit;
  // word → its term's id (DROPPED: the analyzer keeps nothing), an open-addressing table probed with a word's
  // characters where they lie in the text (no string per occurrence); term → id; id → df in contents
  private String[] slotWord = new String[1 << 16];
  private int[] slotHash = new int[1 << 16];
  private int[] slotId = new int[1 << 16];
  private int used = 0;
  private final HashMap<String, Integer> termIds = new HashMap<>();
  private int[] dfs = new int[1024];
  private int[] counts = new int[1024];  // per (term id, field): the frequency in the document at hand, reset after it
  private int fields = 1;
  private byte[] numbers = new byte[0];
  // the words of the segment at hand: their text, start, end and term id
  private String[] wText = new String[1024];
  private int[] wStart = new int[1024], wEnd = new int[1024], wId = new int[1024];
  private int nWords = 0;

  public WordStats(Analyzer analyzer, IndexReader reader, byte[] classes, int limit) {
    this.analyzer = analyzer;
    this.reader = reader;
    this.classes = classes;
    this.limit = limit;
  }

  private byte cls(int cp) {
    return cp < classes.length ? classes[cp] : OTHER;
  }

  /** The id of the word {@code text[start:end]}'s first analyzed term (DROPPED where the analyzer keeps nothing or
   * the word has no letter or digit), remembered. */
  private int id(String text, int start, int end, int hash) throws java.io.IOException {
    int mask = slotWord.length - 1;
    int len = end - start;
    int k = slot(hash) & mask;
    while (slotWord[k] != null) {
      String w = slotWord[k];
      if (slotHash[k] == hash && w.length() == len && text.regionMatches(start, w, 0, len)) return slotId[k];
      k = (k + 1) & mask;
    }
    String word = text.substring(start, end);
    int out = analyze(word);
    slotWord[k] = word;
    slotHash[k] = hash;
    slotId[k] = out;
    if (++used * 2 > slotWord.length) grow();
    return out;
  }

  /** A word's first slot: its hash mixed (short words' String hashes are near-consecutive, which linear probing
   * would pile into long runs). */
  private static int slot(int hash) {
    int h = hash * 0x9E3779B9;
    return h ^ (h >>> 16);
  }

  private void grow() {
    String[] words = slotWord;
    int[] hashes = slotHash, ids = slotId;
    slotWord = new String[2 * words.length];
    slotHash = new int[2 * words.length];
    slotId = new int[2 * words.length];
    int mask = slotWord.length - 1;
    for (int i = 0; i < words.length; i++) {
      if (words[i] == null) continue;
      int k = slot(hashes[i]) & mask;
      while (slotWord[k] != null) k = (k + 1) & mask;
      slotWord[k] = words[i];
      slotHash[k] = hashes[i];
      slotId[k] = ids[i];
    }
  }

  private int analyze(String word) throws java.io.IOException {
    boolean alnum = false;
    for (int i = 0; i < word.length(); ) {
      int cp = word.codePointAt(i);
      if (cls(cp) == ALNUM) {
        alnum = true;
        break;
      }
      i += Character.charCount(cp);
    }
    if (!alnum || analyzer == null) return DROPPED;
    List<String> analyzed = AnalyzerUtils.analyze(analyzer, word);
    if (analyzed.isEmpty()) return DROPPED;
    String term = analyzed.get(0);
    Integer t = termIds.get(term);
    if (t == null) {
      t = termIds.size();
      termIds.put(term, t);
      if (t >= dfs.length) dfs = java.util.Arrays.copyOf(dfs, 2 * dfs.length);
      dfs[t] = reader == null ? 0 : reader.docFreq(new Term("contents", term));
    }
    return t;
  }

  private void add(String text, int start, int end, int hash) throws java.io.IOException {
    if (nWords == wId.length) {
      int n = 2 * nWords;
      wText = java.util.Arrays.copyOf(wText, n);
      wStart = java.util.Arrays.copyOf(wStart, n);
      wEnd = java.util.Arrays.copyOf(wEnd, n);
      wId = java.util.Arrays.copyOf(wId, n);
    }
    wText[nWords] = text;
    wStart[nWords] = start;
    wEnd[nWords] = end;
    wId[nWords] = id(text, start, end, hash);
    nWords++;
  }

  /** Adds the words of {@code text}: Python's {@code \w+|[^\w\s]} (or, for a URL, the runs between
   * {@code [\W_]+}); a word's hash is String's, taken while it is scanned. */
  private void split(String text, boolean url) throws java.io.IOException {
    int n = text.length();
    int i = 0;
    while (i < n) {
      int cp = text.codePointAt(i);
      byte c = cls(cp);
      int next = i + Character.charCount(cp);
      boolean run = url ? c == ALNUM : (c == ALNUM || c == UNDERSCORE);
      if (run) {
        int j = i, h = 0;
        while (j < n) {
          int cq = text.codePointAt(j);
          byte k = cls(cq);
          if (url ? k != ALNUM : (k != ALNUM && k != UNDERSCORE)) break;
          int end = j + Character.charCount(cq);
          for (; j < end; j++) h = 31 * h + text.charAt(j);
        }
        add(text, i, j, h);
        i = j;
      } else if (url || c == SPACE) {
        i = next;
      } else {
        int h = 0;
        for (int j = i; j < next; j++) h = 31 * h + text.charAt(j);
        add(text, i, next, h);
        i = next;
      }
    }
  }

  /**
   * @param utf8     every text of the batch, UTF-8, one after another, in segment order (a segment: one field of
   *                 one document); bytes cross JNI far faster than strings
   * @param sizes    each text's size in bytes
   * @param segment  each text's segment; segments are document-major, {@code fields} per document
   * @param url      each text's splitting: 1 for a URL
   * @param keep     per segment, how many of its first words to return (-1: all)
   * @return the returned words joined by {@code \n} (whitespace to Python, so never in a word); {@link #numbers()}
   *     then holds, little-endian int32: per segment its content length, its word count and the number of words
   *     returned; then per returned word its term's document frequency (-1: the word is dropped) and the term's
   *     frequency in each of its document's {@code fields} segments
   */
  public String scan(byte[] utf8, int[] sizes, int[] segment, int[] url, int segments, int fields, int[] keep)
      throws java.io.IOException {
    if (used > limit) {  // between batches only: ids agree within one
      java.util.Arrays.fill(slotWord, null);
      used = 0;
      termIds.clear();
    }
    if (fields != this.fields) {
      this.fields = fields;
      counts = new int[fields * dfs.length];
    }
    StringBuilder sb = new StringBuilder();
    int[] head = new int[3 * segments];
    ByteBuffer tail = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    int[] segFirst = new int[fields + 1];
    int t = 0, at = 0, returned = 0;
    for (int doc = 0; doc * fields < segments; doc++) {
      nWords = 0;
      for (int f = 0; f < fields; f++) {
        int s = doc * fields + f;
        segFirst[f] = nWords;
        while (t < sizes.length && segment[t] == s) {
          split(new String(utf8, at, sizes[t], java.nio.charset.StandardCharsets.UTF_8), url[t] == 1);
          at += sizes[t];
          t++;
        }
        if (fields * (dfs.length) > counts.length) counts = java.util.Arrays.copyOf(counts, fields * dfs.length);
        int length = 0;
        for (int w = segFirst[f]; w < nWords; w++) {
          int id = wId[w];
          if (id != DROPPED) {
            counts[id * fields + f]++;
            length++;
          }
        }
        int size = nWords - segFirst[f];
        head[3 * s] = length;
        head[3 * s + 1] = size;
        head[3 * s + 2] = keep[s] < 0 ? size : Math.min(keep[s], size);
      }
      segFirst[fields] = nWords;
      for (int f = 0; f < fields; f++) {
        int s = doc * fields + f;
        for (int w = segFirst[f]; w < segFirst[f] + head[3 * s + 2]; w++) {
          if (returned++ > 0) sb.append('\n');
          sb.append(wText[w], wStart[w], wEnd[w]);
          if (tail.remaining() < 4 * (fields + 1)) {
            ByteBuffer bigger = ByteBuffer.allocate(2 * tail.capacity()).order(ByteOrder.LITTLE_ENDIAN);
            tail.flip();
            bigger.put(tail);
            tail = bigger;
          }
          int id = wId[w];
          tail.putInt(id == DROPPED ? -1 : dfs[id]);
          for (int g = 0; g < fields; g++) tail.putInt(id == DROPPED ? 0 : counts[id * fields + g]);
        }
      }
      for (int f = 0; f < fields; f++) {  // the counts back to zero for the next document
        for (int w = segFirst[f]; w < segFirst[f + 1]; w++) if (wId[w] != DROPPED) counts[wId[w] * fields + f] = 0;
      }
    }
    ByteBuffer buf = ByteBuffer.allocate(4 * head.length + tail.position()).order(ByteOrder.LITTLE_ENDIAN);
    buf.asIntBuffer().put(head);
    buf.position(4 * head.length);
    tail.flip();
    buf.put(tail);
    numbers = buf.array();
    return sb.toString();
  }

  public byte[] numbers() {
    return numbers;
  }
}
