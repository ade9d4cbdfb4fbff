"""The multi-rank simulator of plans: every rank's roles run as coroutines on
numpy buffers under the seeded scheduler (purlin.simulator.scheduler), as the
runtimes would run them. Compilation does not import it; the plan level does."""
