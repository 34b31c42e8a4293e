"""TW-BERT: End-to-End Query Term Weighting (Samel et al., KDD 2023) on irglow's Lucene indexes."""
