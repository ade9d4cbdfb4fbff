"""purlin's dialects: coll (semantics), snac (orchestration), atom (datapath)."""
