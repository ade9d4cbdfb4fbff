// RUN: not purlin-opt %s 2>&1 | filecheck %s
// RUN: not purlin-opt %s -p coll-expand 2>&1 | filecheck %s

// Buffers that do not fit the collective: one located line, checked before
// any pass runs.

func.func @f(%a: memref<8xf32>, %b: memref<12xf32>) {
  coll.all_gather %a, %b world 2 : memref<8xf32>, memref<12xf32>
  func.return
}
// CHECK:     bad-sizes.mlir:8:3: error: 'coll.all_gather': output must have world x input = 2 x 8 = 16 elements, got 12
// CHECK-NOT: {{.}}
