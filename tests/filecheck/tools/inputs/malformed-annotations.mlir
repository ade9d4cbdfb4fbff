// Input of verify-diagnostics.mlir: annotations purlin-opt cannot read; the
// function verifies, so they are the only errors.

func.func @fine(%a: memref<8xf32>) {
  // expected-error @+ {{x}}
  // expected-error @+1 world size}}
  // expected-eror {{world size}}
  // expected-error {{world size}} and more
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @bad_regex(%a: memref<8xf32>) {
  // expected-error-re @+1 {{world size {{(}}}}
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}
