"""The passes that cross layers, one per file: stablehlo/shard -> coll,
coll -> snac (with the cost model that picks its strategy), snac -> atom,
atom -> plan. The atom -> CUDA path is purlin.cuda."""
