"""The ML IRs purlin imports: StableHLO (and its interpreter-test dialects
check and interpreter) and MLIR's shard, with the process groups and tensor
layouts their importers in purlin.conversion share."""
