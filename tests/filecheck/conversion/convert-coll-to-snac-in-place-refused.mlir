// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac' 2>&1 | filecheck %s

// all_to_all in place: rank 0's output slice from rank 1 covers the input
// slice it sends to rank 1, which may not have left yet.
func.func @all_to_all(%x: memref<64xf32>) {
  coll.all_to_all %x, %x world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// CHECK: convert-coll-to-snac-in-place-refused.mlir:6:3: error: 'coll.collective': input and output are one buffer, but rank 0's output slice (1, 0) at [16, 32) covers its input slice (0, 1) at [16, 32), which may still be on its way to a peer; in place, each output slice must be the input slice of its own name (all_reduce); pass distinct buffers
