"""What the tests, purlin-run and the benchmark share to make and check cases:
seeded buffers and the expected results of the named collectives. Nothing in
the library path (purlin.compile, purlin.runtime, purlin.torch) imports it."""
