// RUN: not purlin-opt %s 2>&1 | filecheck %s

func.func @f(%a: memref<8xf32>) {
  coll.allreduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:      unknown-op.mlir:4:{{[0-9]+}}: error: Operation coll.allreduce is not registered
// CHECK-NEXT: {{^}}  coll.allreduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: {{^ *\^$}}
// CHECK-NOT:  {{.}}
