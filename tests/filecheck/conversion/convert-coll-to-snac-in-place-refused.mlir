// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac' 2>&1 | filecheck %s
// RUN: echo 'func.func @a2av(%%x: memref<64xf32>, %%n: memref<4x4xi64>) { coll.all_to_all_v %%x, %%x world 4 counts %%n : memref<64xf32>, memref<64xf32>, memref<4x4xi64> func.return }' | not purlin-opt -p 'coll-expand,convert-coll-to-snac' 2>&1 | filecheck %s --check-prefix=DYNAMIC

// all_to_all in place: rank 0's output slice from rank 1 covers the input
// slice it sends to rank 1, which may not have left yet.
func.func @all_to_all(%x: memref<64xf32>) {
  coll.all_to_all %x, %x world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// CHECK: convert-coll-to-snac-in-place-refused.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': input and output are one buffer, but rank 0's output slice (1, 0) at [16, 32) covers its input slice (0, 1) at [16, 32), which may still be on its way to a peer; in place, each output slice must be the input slice of its own name (all_reduce); pass distinct buffers

// Dynamic counts: which slices overlap is known only with the counts, unless
// the input and output have one layout (all_reduce_v).
// DYNAMIC: stdin:1:{{[0-9]+}}: error: 'coll.collective': input and output are one buffer, but the counts are dynamic and the input and output layouts differ: which slices overlap is not known; pass distinct buffers
