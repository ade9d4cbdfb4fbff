"""The datapath layer: the atom dialect (copy and N-to-1 reduce with a
mechanism) and the per-generation lowering rules."""
