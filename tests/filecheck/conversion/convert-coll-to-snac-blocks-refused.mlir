// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput symmetric=true ranks_per_device=8 blocks=128}' 2>&1 | filecheck %s
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency ranks_per_device=4 sms=100 blocks=101}' 2>&1 | filecheck %s --check-prefix=LATENCY
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency ranks_per_device=4 sms=100 blocks=100}' | filecheck %s --check-prefix=FITS

// Blocks asked for where ranks share a GPU: every rank's grid must be
// resident at once (its blocks wait for the peers'), at most 4 blocks of 512
// threads an SM for all ranks together.
func.func @all_gather(%in: memref<1048576xbf16>, %out: memref<8388608xbf16>) {
  coll.all_gather %in, %out world 8 : memref<1048576xbf16>, memref<8388608xbf16>
  func.return
}
// CHECK: convert-coll-to-snac-blocks-refused.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': blocks=128: its roles take 129 blocks a rank, but 8 ranks share a GPU of 132 SMs, which hold 66 a rank at once, and every rank's blocks wait for its peers'; expected fewer blocks, or none asked (the cost model's)
// LATENCY: error: 'coll.collective': blocks=101: its roles take 101 blocks a rank, but 4 ranks share a GPU of 100 SMs, which hold 100 a rank at once
// FITS: snac.role fused blocks 100
