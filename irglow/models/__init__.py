"""Neural models: TW-BERT (query term weighting) and GLOW/BISON (BM25-weighted attention encoders)."""
