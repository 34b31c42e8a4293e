"""GLOW / BISON: Siamese BERT encoders with BM25-weighted attention."""

# the trainable variants (irglow.models.glow.model): named here so that the stage can list them without torch
VARIANTS = ("bert", "glow", "glow-idf", "glow-tw", "glow-us", "glow-wt")
