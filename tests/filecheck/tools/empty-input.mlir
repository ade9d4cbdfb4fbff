// RUN: purlin-opt %s | filecheck %s
// RUN: purlin-opt %S/inputs/empty.mlir | filecheck %s
// RUN: purlin-opt - < %S/inputs/empty.mlir | filecheck %s
// RUN: purlin-opt %S/inputs/empty.mlir --split-input-file | filecheck %s

// Input without operations (an empty file, or this one: only comments) is an
// empty module, as in mlir-opt; it used to be "Could not parse entire input!".

// CHECK:      {{^}}builtin.module {
// CHECK-NEXT: {{^}}}
// CHECK-NOT:  {{.}}
