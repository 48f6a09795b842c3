"""`pearl join`: a fuzzy join of two tables on a name column, by embedding (and string) similarity."""
