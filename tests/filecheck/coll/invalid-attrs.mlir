// RUN: purlin-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// RUN: purlin-opt %s --split-input-file --parsing-diagnostics | filecheck %s --check-prefix=FAILS

// Malformed layout and consume attributes are reported where they are written,
// as parse errors: the source line, a caret under the attribute, and the rule.
// Every case must fail: none prints its module.
// FAILS-NOT: builtin.module

func.func @unknown_kind(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<diagonal, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<diagonal, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^
// CHECK-NEXT: unknown layout kind 'diagonal', expected one of packed, scattered, addressed, transposed (each optionally with _v) or named
  func.return
}

// -----

func.func @named_has_no_v_form(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named_v, world 2, ?> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<named_v, world 2, ?> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^
// CHECK-NEXT: unknown layout kind 'named_v', expected one of packed, scattered, addressed, transposed (each optionally with _v) or named
  func.return
}

// -----

func.func @layout_world_zero(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 0, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<packed, world 0, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^{{$}}
// CHECK-NEXT: invalid packed layout: world size must be at least 1, got 0
  func.return
}

// -----

func.func @layout_world_too_large(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<transposed_v, world 99999999999999999999, [[1]]> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<transposed_v, world 99999999999999999999, [[1]]> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^{{$}}
// CHECK-NEXT: invalid transposed_v layout: world size 99999999999999999999 is more than the 576 ranks purlin handles
  func.return
}

// -----

func.func @negative_count(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<scattered, world 2, -4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:79
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<scattered, world 2, -4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid scattered layout: slice count must be non-negative, got -4
  func.return
}

// -----

func.func @counts_length(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed_v, world 4, [1, 2, 3]> out #coll.layout<scattered_v, world 4, [1, 2, 3]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<packed_v, world 4, [1, 2, 3]> out #coll.layout<scattered_v, world 4, [1, 2, 3]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid packed_v layout: expected 4 counts (one per rank), got 3
  func.return
}

// -----

func.func @counts_negative(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered_v, world 2, [3, -1]> out #coll.layout<packed_v, world 2, [3, -1]> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered_v, world 2, [3, -1]> out #coll.layout<packed_v, world 2, [3, -1]> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid scattered_v layout: counts must be non-negative, got -1
  func.return
}

// -----

func.func @matrix_not_square(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<addressed_v, world 2, [[1, 2], [3]]> out #coll.layout<transposed_v, world 2, [[1, 2], [3, 4]]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<addressed_v, world 2, [[1, 2], [3]]> out #coll.layout<transposed_v, world 2, [[1, 2], [3, 4]]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid addressed_v layout: counts must be a 2x2 matrix (row = sender)
  func.return
}

// -----

func.func @overlap(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, 0), (0, 2, 4, 1)]> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, 0), (0, 2, 4, 1)]> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid named layout: slices 0 [0, 4) and 1 [2, 6) overlap on rank 0
  func.return
}

// -----

func.func @overlap_past_empty_slice(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(1, 0, 6, 0), (1, 1, 0, 2), (1, 4, 2, 1)]> out #coll.layout<packed, world 2, 2> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<named, world 2, [(1, 0, 6, 0), (1, 1, 0, 2), (1, 4, 2, 1)]> out #coll.layout<packed, world 2, 2> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid named layout: slices 0 [0, 6) and 1 [4, 6) overlap on rank 1
  func.return
}

// -----

func.func @names_disagree_in_size(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, (1, 0)), (1, 0, 2, (1, 0))]> out #coll.layout<packed, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:42
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, (1, 0)), (1, 0, 2, (1, 0))]> out #coll.layout<packed, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid named layout: slices named (1, 0) disagree in size: 4 and 2
  func.return
}

// -----

func.func @slice_outside_world(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<named, world 2, [(2, 0, 4, 0)]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:79
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<named, world 2, [(2, 0, 4, 0)]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid named layout: slice 0 is on rank 2, outside world 2
  func.return
}

// -----

func.func @negative_offset(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<named, world 2, [(0, -1, 4, 0)]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:79
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<named, world 2, [(0, -1, 4, 0)]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: invalid named layout: slice 0 on rank 0 has a negative offset or size
  func.return
}

// -----

func.func @unknown_reduction(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce mean> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:134
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce mean> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^
// CHECK-NEXT: expected a reduction op after 'reduce': sum, max, min, prod, and, or, xor or avg, got 'mean'
  func.return
}

// -----

func.func @bad_consume(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<move> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:127
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<move> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^
// CHECK-NEXT: Expected 'reduce' (consume is 'copy' or 'reduce OP')
  func.return
}

// -----

func.func @not_a_layout(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.consume<copy> out #coll.layout<scattered, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:29
// CHECK-NEXT: coll.collective %a, %a in #coll.consume<copy> out #coll.layout<scattered, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: expected a #coll.layout attribute as input layout, got #coll.consume<copy>
  func.return
}

// -----

func.func @missing_reduction_op(%a: memref<8xf32>) {
  coll.all_reduce %a, %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK:      invalid-attrs.mlir:[[# @LINE - 1]]:19
// CHECK-NEXT: coll.all_reduce %a, %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: ^^
// CHECK-NEXT: expected a reduction op after 'coll.all_reduce': sum, max, min, prod, and, or, xor or avg
  func.return
}
