// RUN: not purlin-opt %s 2>&1 | filecheck %s

// A syntax error: one diagnostic line saying what was expected, then the
// source line and a caret under the column, as mlir-opt prints it.

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:      {{^}}{{.*}}bad-syntax.mlir:7:26: error: Expected ','
// CHECK-NEXT: {{^}}  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: {{^}}                         ^{{$}}
// CHECK-NOT:  {{.}}
