// Input of verify-diagnostics.mlir: annotations that do not hold.

func.func @wrong_text(%a: memref<8xf32>) {
  // expected-error@+1 {{world size must be at least 2}}
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @nothing_fails(%a: memref<8xf32>) {
  // expected-error@+1 {{never produced}}
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @unannotated(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

// mlir-opt's spelling with a space before the location, against another error.
func.func @spaced(%a: memref<8xf32>) {
  // expected-error @+1 {{a different error}}
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}
