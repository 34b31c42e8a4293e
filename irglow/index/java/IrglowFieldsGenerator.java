package io.anserini.index.generator;

import io.anserini.collection.InvalidContentsException;
import io.anserini.collection.MultifieldSourceDocument;
import io.anserini.collection.SourceDocument;
import io.anserini.index.IndexCollection;
import java.util.Arrays;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.util.BytesRef;

/**
 * Anserini's {@code DefaultLuceneDocumentGenerator} for irglow's multi-field indexes, storing only what some stage
 * reads: the id (stored, and as doc values for Anserini's tie-breaking sort); {@code contents} with positions and
 * document vectors with positions (RM3's feedback terms, TW-BERT's phrase frequencies); each of {@code -fields}
 * with positions but no document vectors (BM25F, the multi-field searcher and the statistics read its postings
 * and norms; its vectors, a second copy of the text, were a quarter of the index).  No raw JSON is stored.  Found by
 * Anserini's {@code -generator IrglowFieldsGenerator} (its package is the generators' package).
 */
public class IrglowFieldsGenerator<T extends SourceDocument> implements LuceneDocumentGenerator<T> {
  protected IndexCollection.Args args;

  public IrglowFieldsGenerator() {
    this(new IndexCollection.Args());
  }

  public IrglowFieldsGenerator(IndexCollection.Args args) {
    this.args = args;
  }

  @Override
  public Document createDocument(T src) throws GeneratorException {
    String id = src.id();
    String contents;
    try {
      contents = src.contents();
    } catch (InvalidContentsException e) {
      throw new InvalidDocumentException();
    }
    if (contents.trim().length() == 0) {
      throw new EmptyDocumentException();
    }
    Document document = new Document();
    document.add(new StringField("id", id, Field.Store.YES));
    document.add(new BinaryDocValuesField("id", new BytesRef(id)));

    FieldType text = new FieldType();
    text.setStored(args.storeContents);
    text.setTokenized(true);
    text.setIndexOptions(args.storePositions ? IndexOptions.DOCS_AND_FREQS_AND_POSITIONS : IndexOptions.DOCS_AND_FREQS);
    FieldType withVectors = new FieldType(text);
    if (args.storeDocvectors) {
      withVectors.setStoreTermVectors(true);
      withVectors.setStoreTermVectorPositions(true);
    }
    withVectors.freeze();
    text.freeze();
    document.add(new Field("contents", contents, withVectors));
    if (src instanceof MultifieldSourceDocument) {
      ((MultifieldSourceDocument) src).fields().forEach((k, v) -> {
        if (args.fields != null && Arrays.asList(args.fields).contains(k)) {
          document.add(new Field(k, v, text));
        }
      });
    }
    return document;
  }
}
