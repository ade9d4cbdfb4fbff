// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FAILS

// Every case must fail: none prints its module.
// FAILS-NOT: builtin.module

// One case per verifier rule of the coll dialect, each with its exact message.
// Layout attributes are checked as they are parsed: see invalid-attrs.mlir.

// -- shared by all collectives ------------------------------------------------

func.func @world_zero(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': world size must be at least 1, got 0
  func.return
}

// -----

func.func @world_negative(%a: memref<8xf32>) {
  coll.all_to_all %a, %a world -2 : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all': world size must be at least 1, got -2
  func.return
}

// -----

func.func @world_too_large(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 99999999999999999999 : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': world size 99999999999999999999 is more than the 576 ranks purlin handles (the largest NVLink domain it compiles, verifies and runs for)
  func.return
}

// -----

func.func @world_just_too_large(%a: memref<577xf32>, %b: memref<332929xf32>) {
  coll.all_gather %a, %b world 577 : memref<577xf32>, memref<332929xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': world size 577 is more than the 576 ranks purlin handles
  func.return
}

// -----

func.func @element_types_differ(%a: memref<8xf32>, %b: memref<8xf16>) {
  coll.all_reduce sum %a, %b world 2 : memref<8xf32>, memref<8xf16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': input and output element types differ (f32 vs f16)
  func.return
}

// -----

func.func @unsupported_element_type(%a: memref<8xi16>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xi16>, memref<8xi16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': element type i16 is not supported, expected one of bf16, f16, f32, f8E4M3FN, f8E5M2, i8, ui8, i32, ui32, i64, ui64, f64
  func.return
}

// -----

func.func @boolean_element_type(%a: memref<8xi1>) {
  coll.all_gather %a, %a world 1 : memref<8xi1>, memref<8xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': element type i1 is not supported, expected one of bf16, f16, f32, f8E4M3FN, f8E5M2, i8, ui8, i32, ui32, i64, ui64, f64
  func.return
}

// -----

func.func @not_1d(%a: memref<2x4xf32>, %b: memref<8xf32>) {
  coll.all_reduce sum %a, %b world 2 : memref<2x4xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': input must be a 1-D memref, got memref<2x4xf32>
  func.return
}

// -----

func.func @missing_reduction(%a: memref<8xf32>) {
  "coll.all_reduce"(%a, %a) <{world = #builtin.int<2>}> : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': a reduction op (sum, max, min, prod, and, or, xor or avg) is required
  func.return
}

// -----

func.func @reduction_on_copy(%a: memref<8xf32>, %b: memref<16xf32>) {
  "coll.all_gather"(%a, %b) <{world = #builtin.int<2>, op = #coll<reduce_kind sum>}> : (memref<8xf32>, memref<16xf32>) -> ()
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': is a copy and takes no reduction op, got 'sum'
  func.return
}

// -----

func.func @deterministic_copy(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather %a, %b world 2 deterministic : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': 'deterministic' only applies to reductions, and this is a copy
  func.return
}

// -----

func.func @prod_fp8_e4m3(%a: memref<8xf8E4M3FN>) {
  coll.all_reduce prod %a, %a world 2 : memref<8xf8E4M3FN>, memref<8xf8E4M3FN>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': reduction 'prod' is not supported for fp8e4m3 (it saturates); use f16, bf16 or f32
  func.return
}

// -----

func.func @prod_fp8_e5m2(%a: memref<8xf8E5M2>, %b: memref<16xf8E5M2>) {
  coll.reduce_scatter_v prod %b, %a world 2 counts [8, 8] : memref<16xf8E5M2>, memref<8xf8E5M2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter_v': reduction 'prod' is not supported for fp8e5m2 (it saturates); use f16, bf16 or f32
  func.return
}

// -- buffer sizes of the fixed collectives ------------------------------------

// -----

func.func @all_reduce_sizes(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_reduce sum %a, %b world 2 : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': input and output must have the same number of elements, got 8 and 16
  func.return
}

// -----

func.func @all_gather_sizes(%a: memref<8xf32>, %b: memref<24xf32>) {
  coll.all_gather %a, %b world 2 : memref<8xf32>, memref<24xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': output must have world x input = 2 x 8 = 16 elements, got 24
  func.return
}

// -----

func.func @all_gather_dynamic_input(%a: memref<?xf32>, %b: memref<9xf32>) {
  coll.all_gather %a, %b world 2 : memref<?xf32>, memref<9xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': output of 9 elements is not divisible by world size 2
  func.return
}

// -----

func.func @reduce_scatter_sizes(%a: memref<8xf32>, %b: memref<24xf32>) {
  coll.reduce_scatter sum %b, %a world 2 : memref<24xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter': input must have world x output = 2 x 8 = 16 elements, got 24
  func.return
}

// -----

func.func @reduce_scatter_dynamic_output(%a: memref<?xf32>, %b: memref<9xf32>) {
  coll.reduce_scatter max %b, %a world 2 : memref<9xf32>, memref<?xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter': input of 9 elements is not divisible by world size 2
  func.return
}

// -----

func.func @all_to_all_sizes(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_to_all %a, %b world 2 : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all': input and output must have the same number of elements, got 8 and 16
  func.return
}

// -----

func.func @all_to_all_not_divisible(%a: memref<10xf32>) {
  coll.all_to_all %a, %a world 4 : memref<10xf32>, memref<10xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all': buffer of 10 elements is not divisible by world size 4
  func.return
}

// -- counts -------------------------------------------------------------------

// -----

func.func @counts_on_fixed(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather %a, %b world 2 counts [8, 8] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': takes no counts; use 'coll.all_gather_v' for per-rank counts
  func.return
}

// -----

func.func @counts_on_all_reduce(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 counts [4, 4] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': takes no counts; use 'coll.all_reduce_v' for per-rank counts
  func.return
}

// -----

func.func @v_without_counts(%a: memref<8xf32>, %b: memref<16xf32>) {
  "coll.all_gather_v"(%a, %b) <{world = #builtin.int<2>}> : (memref<8xf32>, memref<16xf32>) -> ()
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': needs counts, either static (counts [..]) or dynamic (counts %operand)
  func.return
}

// -----

func.func @v_with_both_counts(%a: memref<8xf32>, %b: memref<16xf32>, %n: memref<2xi64>) {
  "coll.all_gather_v"(%a, %b, %n) <{world = #builtin.int<2>, static_counts = [#builtin.int<8>, #builtin.int<8>]}> : (memref<8xf32>, memref<16xf32>, memref<2xi64>) -> ()
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': has both static and dynamic counts; give one of them
  func.return
}

// -----

func.func @counts_length(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather_v %a, %b world 4 counts [8, 8] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': expected 4 counts for world 4 ranks, got 2
  func.return
}

// -----

func.func @counts_matrix_length(%a: memref<16xf32>) {
  coll.all_to_all_v %a, %a world 2 counts [1, 2, 3] : memref<16xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all_v': expected 2x2 = 4 counts for world 2 ranks, got 3
  func.return
}

// -----

func.func @counts_negative(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.reduce_scatter_v sum %b, %a world 2 counts [17, -1] : memref<16xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter_v': counts must be non-negative, got [17, -1]
  func.return
}

// -----

func.func @all_gather_v_total(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather_v %a, %b world 3 counts [8, 4, 6] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': output buffer has 16 elements but the scattered_v layout for world 3 needs at least 18 (the sum of the counts)
  func.return
}

// -----

func.func @all_gather_v_input(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather_v %a, %b world 2 counts [3, 13] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': input buffer has 8 elements but the packed_v layout for world 2 needs at least 13 (the largest count)
  func.return
}

// -----

func.func @reduce_scatter_v_total(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.reduce_scatter_v sum %b, %a world 2 counts [8, 9] : memref<16xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter_v': input buffer has 16 elements but the scattered_v layout for world 2 needs at least 17 (the sum of the counts)
  func.return
}

// -----

func.func @reduce_scatter_v_output(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.reduce_scatter_v sum %b, %a world 2 counts [9, 7] : memref<16xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter_v': output buffer has 8 elements but the packed_v layout for world 2 needs at least 9 (the largest count)
  func.return
}

// -----

func.func @all_reduce_v_input(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_reduce_v sum %a, %b world 3 counts [3, 0, 6] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce_v': input buffer has 8 elements but the scattered_v layout for world 3 needs at least 9 (the sum of the counts)
  func.return
}

// -----

func.func @all_reduce_v_output(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_reduce_v max %b, %a world 3 counts [3, 0, 6] : memref<16xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce_v': output buffer has 8 elements but the scattered_v layout for world 3 needs at least 9 (the sum of the counts)
  func.return
}

// -----

func.func @all_reduce_v_without_reduction(%a: memref<8xf32>) {
  "coll.all_reduce_v"(%a, %a) <{world = #builtin.int<2>, static_counts = [#builtin.int<4>, #builtin.int<4>]}> : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce_v': a reduction op (sum, max, min, prod, and, or, xor or avg) is required
  func.return
}

// -----

func.func @all_reduce_v_counts_matrix(%a: memref<8xf32>, %n: memref<2x2xi64>) {
  coll.all_reduce_v sum %a, %a world 2 counts %n : memref<8xf32>, memref<8xf32>, memref<2x2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce_v': dynamic counts must be a memref<2xi64> (a count per rank), got memref<2x2xi64>
  func.return
}

// -----

func.func @all_to_all_v_input(%a: memref<8xf32>) {
  coll.all_to_all_v %a, %a world 2 counts [4, 5, 1, 1] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all_v': input buffer has 8 elements but the addressed_v layout for world 2 needs at least 9 (the most any rank sends: the largest row sum of the counts)
  func.return
}

// -----

func.func @all_to_all_v_output(%a: memref<8xf32>) {
  coll.all_to_all_v %a, %a world 2 counts [4, 4, 5, 0] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all_v': output buffer has 8 elements but the transposed_v layout for world 2 needs at least 9 (the most any rank receives: the largest column sum of the counts)
  func.return
}

// -----

func.func @dynamic_counts_shape(%a: memref<8xf32>, %b: memref<16xf32>, %n: memref<3xi64>) {
  coll.all_gather_v %a, %b world 2 counts %n : memref<8xf32>, memref<16xf32>, memref<3xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': dynamic counts must be a memref<2xi64> (a count per rank), got memref<3xi64>
  func.return
}

// -----

func.func @dynamic_counts_type(%a: memref<8xf32>, %b: memref<16xf32>, %n: memref<2xi32>) {
  coll.reduce_scatter_v sum %b, %a world 2 counts %n : memref<16xf32>, memref<8xf32>, memref<2xi32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.reduce_scatter_v': dynamic counts must be a memref<2xi64> (a count per rank), got memref<2xi32>
  func.return
}

// -----

func.func @dynamic_counts_not_matrix(%a: memref<8xf32>, %n: memref<2xi64>) {
  coll.all_to_all_v %a, %a world 2 counts %n : memref<8xf32>, memref<8xf32>, memref<2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_to_all_v': dynamic counts must be a memref<2x2xi64> (a count per sender and receiver), got memref<2xi64>
  func.return
}

// -- the generic collective -----------------------------------------------------

// -----

func.func @not_covered(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, 0)]> out #coll.layout<named, world 2, [(1, 0, 4, (0, 1))]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': output slice (0, 1) is not covered by any input slice
  func.return
}

// -----

func.func @sizes_disagree(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(0, 0, 4, 5)]> out #coll.layout<named, world 2, [(1, 0, 3, 5)]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': slice 5 has 4 elements in the input but 3 in the output
  func.return
}

// -----

func.func @ambiguous_copy(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': copy of slice 0 is ambiguous: ranks 0, 1 all hold it
  func.return
}

// -----

func.func @worlds_differ(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<scattered, world 4, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': input layout is for world 2 but output layout for world 4
  func.return
}

// -----

func.func @buffer_too_small(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.collective %a, %b in #coll.layout<packed, world 4, 8> out #coll.layout<scattered, world 4, 8> consume #coll.consume<copy> : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': output buffer has 16 elements but the scattered layout for world 4 needs at least 32 (4 slices of 8)
  func.return
}

// -----

func.func @named_buffer_too_small(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<named, world 2, [(0, 6, 4, 1), (1, 0, 4, 0)]> out #coll.layout<packed, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': input buffer has 8 elements but the named layout for world 2 needs at least 10 (where the last slice on a rank ends)
  func.return
}

// -----

func.func @collective_prod_fp8(%a: memref<8xf8E4M3FN>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce prod> : memref<8xf8E4M3FN>, memref<8xf8E4M3FN>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': reduction 'prod' is not supported for fp8e4m3 (it saturates); use f16, bf16 or f32
  func.return
}

// -----

func.func @collective_deterministic_copy(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> deterministic : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': 'deterministic' only applies to reductions, but consume is copy
  func.return
}

// -----

func.func @collective_element_types(%a: memref<8xf32>, %b: memref<8xbf16>) {
  coll.collective %a, %b in #coll.layout<packed, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> : memref<8xf32>, memref<8xbf16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': input and output element types differ (f32 vs bf16)
  func.return
}

// -----

func.func @dynamic_layout_without_counts(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<packed_v, world 2, ?> out #coll.layout<scattered_v, world 2, ?> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': a layout with dynamic counts '?' needs a counts operand
  func.return
}

// -----

func.func @counts_with_static_layout(%a: memref<8xf32>, %n: memref<2xi64>) {
  coll.collective %a, %a in #coll.layout<packed, world 2, 4> out #coll.layout<packed, world 2, 4> consume #coll.consume<copy> counts %n : memref<8xf32>, memref<8xf32>, memref<2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': a counts operand needs a layout with dynamic counts '?'
  func.return
}

// -----

func.func @collective_counts_shape(%a: memref<8xf32>, %n: memref<2xi64>) {
  coll.collective %a, %a in #coll.layout<addressed_v, world 2, ?> out #coll.layout<transposed_v, world 2, ?> consume #coll.consume<copy> counts %n : memref<8xf32>, memref<8xf32>, memref<2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': dynamic counts must be a memref<2x2xi64> (a count per sender and receiver), got memref<2xi64>
  func.return
}

// -----

func.func @dynamic_counts_shapes_differ(%a: memref<8xf32>, %n: memref<2xi64>) {
  coll.collective %a, %a in #coll.layout<packed_v, world 2, ?> out #coll.layout<transposed_v, world 2, ?> consume #coll.consume<copy> counts %n : memref<8xf32>, memref<8xf32>, memref<2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': dynamic packed_v and transposed_v layouts cannot share one counts operand (one takes a list, the other a matrix)
  func.return
}

// -----

func.func @groups_overlap(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather %a, %b world 4 groups [[0, 1], [1, 2]] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': groups overlap: rank 1 is in groups 0 and 1
  func.return
}

// -----

func.func @rank_twice_in_a_group(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 4 groups [[0, 0]] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': groups overlap: rank 0 is twice
  func.return
}

// -----

func.func @group_rank_outside_world(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 4 groups [[0, 4]] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': group 0 names rank 4, outside world 4
  func.return
}

// -----

func.func @empty_group(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 4 groups [[0, 1], []] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': group 1 is empty
  func.return
}

// -----

func.func @unequal_groups(%a: memref<8xf32>, %b: memref<16xf32>) {
  coll.all_gather %a, %b world 5 groups [[0, 1], [2, 3, 4]] : memref<8xf32>, memref<16xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': groups have sizes 2, 3, but its buffers are sized by the group: every group needs the same number of ranks
  func.return
}

// -----

func.func @unequal_groups_of_counts(%a: memref<8xf32>) {
  coll.all_reduce_v sum %a, %a world 5 groups [[0, 1], [2, 3, 4]] counts [4, 4] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce_v': groups have sizes 2, 3, but its counts give one slice per rank of a group: every group needs the same number of ranks
  func.return
}

// -----

func.func @grouped_sizes_follow_the_group(%a: memref<8xf32>, %b: memref<32xf32>) {
  coll.all_gather %a, %b world 4 groups [[0, 1], [2, 3]] : memref<8xf32>, memref<32xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather': output must have group size x input = 2 x 8 = 16 elements, got 32
  func.return
}

// -----

func.func @grouped_dynamic_counts(%a: memref<8xf32>, %b: memref<16xf32>, %c: memref<2xi64>) {
  coll.all_gather_v %a, %b world 4 groups [[0, 1], [2, 3]] counts %c : memref<8xf32>, memref<16xf32>, memref<2xi64>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_gather_v': groups need static counts (counts [..]): dynamic counts would leave the groups' slices unknown
  func.return
}

// -----

func.func @generic_groups_of_another_size(%a: memref<8xf32>, %b: memref<8xf32>) {
  coll.collective %a, %b in #coll.layout<packed, world 2, 8> out #coll.layout<packed, world 2, 8> consume #coll.consume<copy> world 6 groups [[0, 1, 2], [3, 4, 5]] : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': the layouts are for 2 ranks, but the groups have 3: with groups, layouts name group-local ranks
  func.return
}

// -----

func.func @bitwise_on_floats(%a: memref<8xf32>) {
  coll.all_reduce xor %a, %a world 2 : memref<8xf32>, memref<8xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': reduction 'xor' combines bits and takes an integer dtype, got f32
  func.return
}

// -----

func.func @average_of_integers(%a: memref<8xi32>) {
  coll.all_reduce avg %a, %a world 2 : memref<8xi32>, memref<8xi32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'coll.all_reduce': reduction 'avg' divides and takes a floating-point dtype, got i32
  func.return
}
