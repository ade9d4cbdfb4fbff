"""The datapath layer: the atom dialect (copy and N-to-1 reduce with a
mechanism), the per-generation lowering rules and the atom-level interpreter."""
