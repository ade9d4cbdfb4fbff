// RUN: not purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true}' 2>&1 | filecheck %s
// RUN: not purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{copy-engine=true}' 2>&1 | filecheck %s --check-prefix=STAGED
// RUN: not purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true regime=latency}' 2>&1 | filecheck %s --check-prefix=LATENCY
// RUN: not purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true strategy=direct}' 2>&1 | filecheck %s --check-prefix=DIRECT

// copy-engine=true copies whole spans between the ranks' own buffers: what
// it cannot take is one diagnostic naming the collective, never a fallback.

func.func @all_reduce(%in: memref<64xf32>, %out: memref<64xf32>) {
  coll.all_reduce sum %in, %out world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// CHECK: copy-engine-refused.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': copy-engine: the collective reduces; the copy engine only copies (expected all_gather, all_to_all or their V forms)

// -----

func.func @dynamic(%a: memref<64xf32>, %b: memref<96xf32>, %c: memref<3x3xi64>) {
  coll.all_to_all_v %a, %b world 3 counts %c : memref<64xf32>, memref<96xf32>, memref<3x3xi64>
  func.return
}
// CHECK: copy-engine-refused.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': copy-engine: counts read on the device are not taken; the copy engine's spans are fixed when the call is issued

// -----

func.func @all_gather(%in: memref<16xf32>, %out: memref<64xf32>) {
  coll.all_gather %in, %out world 4 : memref<16xf32>, memref<64xf32>
  func.return
}
// STAGED: copy-engine-refused.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': copy-engine: needs symmetric=true (the copies go from the rank's input to the peers' outputs)
// LATENCY: copy-engine-refused.mlir:[[# @LINE - 4]]:3: error: 'coll.collective': copy-engine: copies whole spans, not packets: regime=latency does not apply
// DIRECT: copy-engine-refused.mlir:[[# @LINE - 5]]:3: error: 'coll.collective': copy-engine: strategy 'direct' does not apply; the copy engine copies
