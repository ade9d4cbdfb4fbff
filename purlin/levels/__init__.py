"""The simulation levels purlin-run runs a module at (coll, snac, atom, plan):
each lowers the module as far as it needs and executes it on per-rank numpy
buffers; purlin.levels.table lists them."""
