// RUN: not purlin-opt %s 2>&1 | filecheck %s

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce_v sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:      unknown-op.mlir:4:{{[0-9]+}}: error: Operation coll.all_reduce_v is not registered
// CHECK-NEXT: {{^}}  coll.all_reduce_v sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: {{^ *\^$}}
// CHECK-NOT:  {{.}}
