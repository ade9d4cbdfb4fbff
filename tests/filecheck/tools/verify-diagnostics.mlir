// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not purlin-opt %S/inputs/unmet-expectations.mlir --split-input-file --verify-diagnostics 2> %t.err
// RUN: filecheck %s --check-prefix=UNMET < %t.err
// RUN: not purlin-opt %S/inputs/malformed-annotations.mlir --split-input-file --verify-diagnostics 2> %t.bad
// RUN: filecheck %s --check-prefix=MALFORMED < %t.bad

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

// -----

func.func @spaced(%a: memref<8xf32>) {
  // expected-error @+1 {{world size must be at least 1, got 0}}
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @spaced_regex(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  // expected-error-re  @-1  {{world size must be at least {{[0-9]}}}}
  func.return
}

// UNMET:      unmet-expectations.mlir:5:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
// UNMET-NEXT: unmet-expectations.mlir:4:6: error: expected error "world size must be at least 2" was not produced
// UNMET-NEXT: unmet-expectations.mlir:12:6: error: expected error "never produced" was not produced
// UNMET-NEXT: unmet-expectations.mlir:20:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
// UNMET-NEXT: unmet-expectations.mlir:29:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
// UNMET-NEXT: unmet-expectations.mlir:28:6: error: expected error "a different error" was not produced
// UNMET-NOT:  {{.}}

// Annotations that cannot be read are errors naming their line, not ignored.
// MALFORMED:      malformed-annotations.mlir:5:6: error: annotation 'expected-error' has a malformed location '@+': expected @+N, @-N, @above, @below or @unknown
// MALFORMED-NEXT: malformed-annotations.mlir:6:6: error: annotation 'expected-error' has no '{{[{][{]}}': expected the message between '{{[{][{]}}' and '{{[}][}]}}'
// MALFORMED-NEXT: malformed-annotations.mlir:7:6: error: unknown annotation 'expected-eror': expected expected-error, expected-warning, expected-note or expected-remark, each optionally with -re
// MALFORMED-NEXT: malformed-annotations.mlir:8:6: error: annotation 'expected-error' does not end with '{{[}][}]}}'
// MALFORMED-NEXT: malformed-annotations.mlir:16:6: error: annotation 'expected-error-re' has an invalid regular expression '(': missing ), unterminated subpattern
// MALFORMED-NEXT: malformed-annotations.mlir:17:3: error: unexpected error: 'coll.all_reduce': world size must be at least 1, got 0
// MALFORMED-NOT:  {{.}}
