"""Re-rankers: monoBERT (cross-encoder) and NRM-F (multi-field neural ranking), re-ranking any run."""
