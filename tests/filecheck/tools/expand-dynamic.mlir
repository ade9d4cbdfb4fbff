// RUN: not purlin-opt %s -p coll-expand 2>&1 | filecheck %s

// A collective that verifies but cannot be expanded fails the pass with a
// located diagnostic.

func.func @f(%a: memref<?xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<?xf32>, memref<?xf32>
  func.return
}
// CHECK:     expand-dynamic.mlir:7:3: error: 'coll.all_reduce': cannot expand to coll.collective: both buffers have dynamic sizes, so slice sizes are unknown; make one static
// CHECK-NOT: {{.}}
