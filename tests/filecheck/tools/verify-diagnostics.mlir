// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not purlin-opt %S/inputs/unmet-expectations.mlir --split-input-file --verify-diagnostics 2> %t.err
// RUN: filecheck %s --check-prefix=UNMET < %t.err

// With `expected-error` annotations, --verify-diagnostics checks them as
// mlir-opt does: every diagnostic annotated, every annotation met, exit 0.
// (Without any annotation it follows xDSL: see the invalid.mlir tests.)

func.func @fine(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK: func.func @fine

// -----

func.func @on_the_line(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32> // expected-error {{world size must be at least 1, got 0}}
  func.return
}

// -----

func.func @relative(%a: memref<8xf32>) {
  // expected-error@+1 {{'coll.all_gather': output must have world x input}}
  coll.all_gather %a, %a world 3 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @regex_above(%a: memref<8xf32>) {
  coll.all_to_all %a, %a world 3 : memref<8xf32>, memref<8xf32>
  // expected-error-re@above {{buffer of {{[0-9]+}} elements is not divisible by world size 3}}
  func.return
}

// -----

func.func @parse_error(%a: memref<8xf32>) {
  // expected-error@below {{Expected ','}}
  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}

// UNMET:      unmet-expectations.mlir:5:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
// UNMET-NEXT: unmet-expectations.mlir:4:6: error: expected error "world size must be at least 2" was not produced
// UNMET-NEXT: unmet-expectations.mlir:12:6: error: expected error "never produced" was not produced
// UNMET-NEXT: unmet-expectations.mlir:20:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
