// RUN: not purlin-opt %s 2>&1 | filecheck %s

// A syntax error: one diagnostic with the line, a caret and what was expected.

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:      error: {{.*}}bad-syntax.mlir:6:26
// CHECK-NEXT:   coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT:                          ^^
// CHECK-NEXT:                          Expected ','
// CHECK-NOT:  Traceback
