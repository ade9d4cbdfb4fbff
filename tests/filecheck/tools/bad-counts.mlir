// RUN: not purlin-opt %s 2>&1 | filecheck %s

func.func @f(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather_v %a, %b world 4 counts [4, 4, -8, 16] : memref<8xf32>, memref<16xf32>
  func.return
}
// CHECK:     bad-counts.mlir:4:3: error: 'coll.all_gather_v': counts must be non-negative, got [4, 4, -8, 16]
// CHECK-NOT: {{.}}
