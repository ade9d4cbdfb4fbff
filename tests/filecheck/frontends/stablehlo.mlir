// RUN: purlin-opt %s | filecheck %s
// RUN: purlin-opt %s | purlin-opt | filecheck %s

// The StableHLO ops JAX writes around its collectives, in pretty form (the
// reduction both as `applies` and with its region), print in generic form,
// which parses back to the same; @generic gives some in generic form, which
// print as their pretty form does.

func.func @ops(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<2x3xi1>) -> tensor<2x3xf32> {
  %0 = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = stablehlo.broadcast_in_dim %x, dims = [0, 2] : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %2 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.convert %i : (tensor<4xi32>) -> tensor<4xf32>
  %4 = stablehlo.slice %x [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %5 = stablehlo.concatenate %x, %x, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %6 = stablehlo.iota dim = 0 : tensor<4xi32>
  %7 = stablehlo.compare  LT, %i, %6,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %8 = stablehlo.select %p, %x, %x : tensor<2x3xi1>, tensor<2x3xf32>
  %9 = stablehlo.partition_id : tensor<ui32>
  %10 = stablehlo.replica_id : tensor<ui32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %11 = stablehlo.reduce(%x init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  %12 = stablehlo.reduce(%x init: %cst) across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %b: tensor<f32>)  {
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }
  %13 = stablehlo.custom_call @Sharding(%x) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %14 = stablehlo.dynamic_slice %x, %c0, %c0, sizes = [1, 3] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
  %15 = stablehlo.divide %x, %x : tensor<2x3xf32>
  %16 = stablehlo.negate %x : tensor<2x3xf32>
  %17 = stablehlo.clamp %cst, %x, %cst : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %18 = stablehlo.shift_left %i, %i : tensor<4xi32>
  %19 = stablehlo.bitcast_convert %i : (tensor<4xi32>) -> tensor<4xf32>
  return %15 : tensor<2x3xf32>
}
func.func @generic(%x: tensor<2x3xf32>) -> tensor<2x1x3xf32> {
  %0 = "stablehlo.broadcast_in_dim"(%x) <{broadcast_dimensions = array<i64: 0, 2>}> : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
  %1 = "stablehlo.custom_call"(%x) <{api_version = 1 : i32, backend_config = "", call_target_name = "Sharding", called_computations = [], has_side_effect = false}> {mhlo.sharding = "{manual}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "func.return"(%0) : (tensor<2x1x3xf32>) -> ()
}

// CHECK:   func.func @ops(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<2x3xi1>) -> tensor<2x3xf32> {
// CHECK-NEXT:     %0 = "stablehlo.reshape"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:     %1 = "stablehlo.broadcast_in_dim"(%x) <{broadcast_dimensions = array<i64: 0, 2>}> : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
// CHECK-NEXT:     %2 = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:     %3 = "stablehlo.convert"(%i) : (tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT:     %4 = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 2>}> : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:     %5 = "stablehlo.concatenate"(%x, %x) <{dimension = 0 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:     %6 = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<4xi32>
// CHECK-NEXT:     %7 = "stablehlo.compare"(%i, %6) <{comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK-NEXT:     %8 = "stablehlo.select"(%p, %x, %x) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %9 = "stablehlo.partition_id"() : () -> tensor<ui32>
// CHECK-NEXT:     %10 = "stablehlo.replica_id"() : () -> tensor<ui32>
// CHECK-NEXT:     %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:     %11 = "stablehlo.reduce"(%x, %cst) <{dimensions = array<i64: 1>}> ({
// CHECK-NEXT:     ^bb0(%12: tensor<f32>, %13: tensor<f32>):
// CHECK-NEXT:       %14 = stablehlo.add %12, %13 : tensor<f32>
// CHECK-NEXT:       stablehlo.return %14 : tensor<f32>
// CHECK-NEXT:     }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:     %15 = "stablehlo.reduce"(%x, %cst) <{dimensions = array<i64: 0, 1>}> ({
// CHECK-NEXT:     ^bb0(%a: tensor<f32>, %b: tensor<f32>):
// CHECK-NEXT:       %m = stablehlo.maximum %a, %b : tensor<f32>
// CHECK-NEXT:       stablehlo.return %m : tensor<f32>
// CHECK-NEXT:     }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:     %16 = "stablehlo.custom_call"(%x) <{call_target_name = "Sharding", backend_config = ""}> {mhlo.sharding = "{replicated}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %c0 = stablehlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:     %17 = "stablehlo.dynamic_slice"(%x, %c0, %c0) <{slice_sizes = array<i64: 1, 3>}> : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
// CHECK-NEXT:     %18 = stablehlo.divide %x, %x : tensor<2x3xf32>
// CHECK-NEXT:     %19 = "stablehlo.negate"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %20 = stablehlo.clamp %cst, %x, %cst : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %21 = stablehlo.shift_left %i, %i : tensor<4xi32>
// CHECK-NEXT:     %22 = "stablehlo.bitcast_convert"(%i) : (tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT:     func.return %18 : tensor<2x3xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @generic(%x: tensor<2x3xf32>) -> tensor<2x1x3xf32> {
// CHECK-NEXT:     %0 = "stablehlo.broadcast_in_dim"(%x) <{broadcast_dimensions = array<i64: 0, 2>}> : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
// CHECK-NEXT:     %1 = "stablehlo.custom_call"(%x) <{api_version = 1 : i32, backend_config = "", call_target_name = "Sharding", called_computations = [], has_side_effect = false}> {mhlo.sharding = "{manual}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     func.return %0 : tensor<2x1x3xf32>
// CHECK-NEXT:   }

// Linear algebra, padding, windows, sorting, indexing and control flow.
func.func @more(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>, %b: tensor<5x2x3xf32>, %k: tensor<i32>, %u: tensor<1x2xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = stablehlo.dot_general %b, %b, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<5x2x3xf32>, tensor<5x2x3xf32>) -> tensor<5x2x2xf32>
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %2 = stablehlo.pad %x, %cst, low = [1, 0], high = [0, -1], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x4xf32>
  %3 = stablehlo.dynamic_update_slice %x, %u, %k, %k : (tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  %4:2 = stablehlo.while(%i = %k, %v = %x) : tensor<i32>, tensor<2x3xf32>
  cond {
    %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %w = stablehlo.exponential %v : tensor<2x3xf32>
    stablehlo.return %i, %w : tensor<i32>, tensor<2x3xf32>
  }
  %5 = "stablehlo.case"(%k) ({
    stablehlo.return %x : tensor<2x3xf32>
  }, {
    %t = stablehlo.tanh %x : tensor<2x3xf32>
    stablehlo.return %t : tensor<2x3xf32>
  }) : (tensor<i32>) -> tensor<2x3xf32>
  %c0 = stablehlo.constant dense<0.0> : tensor<f32>
  %6 = "stablehlo.reduce_window"(%x, %c0) <{padding = dense<[[0, 0], [2, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 3>}> ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %s = stablehlo.add %a, %c : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %7 = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %l = stablehlo.compare LT, %a, %c, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %l : tensor<i1>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %idx = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi32>
  %8 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 1>}> : (tensor<2x3xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>
  %one = stablehlo.constant dense<1> : tensor<1xi32>
  %upd = stablehlo.constant dense<3.0> : tensor<2xf32>
  %9 = "stablehlo.scatter"(%x, %one, %upd) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>}> ({
  ^bb0(%a: tensor<f32>, %c: tensor<f32>):
    %s = stablehlo.add %a, %c : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  %pred = stablehlo.compare GT, %k, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %10 = "stablehlo.if"(%pred) ({
    stablehlo.return %x : tensor<2x3xf32>
  }, {
    stablehlo.return %x : tensor<2x3xf32>
  }) : (tensor<i1>) -> tensor<2x3xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK:          func.func @more(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>, %b: tensor<5x2x3xf32>, %k: tensor<i32>, %u: tensor<1x2xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:     %0 = "stablehlo.dot_general"(%x, %y) <{precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>], dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:     %1 = "stablehlo.dot_general"(%b, %b) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2]>}> : (tensor<5x2x3xf32>, tensor<5x2x3xf32>) -> tensor<5x2x2xf32>
// CHECK-NEXT:     %cst = stablehlo.constant dense<0xff800000> : tensor<f32>
// CHECK-NEXT:     %2 = "stablehlo.pad"(%x, %cst) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 0, -1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x4xf32>
// CHECK-NEXT:     %3 = "stablehlo.dynamic_update_slice"(%x, %u, %k, %k) : (tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %4, %5 = "stablehlo.while"(%k, %x) ({
// CHECK-NEXT:     ^bb0(%i: tensor<i32>, %v: tensor<2x3xf32>):
// CHECK-NEXT:       %p = "stablehlo.compare"(%i, %k) <{comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:       stablehlo.return %p : tensor<i1>
// CHECK-NEXT:     }, {
// CHECK-NEXT:     ^bb0(%i_1: tensor<i32>, %v_1: tensor<2x3xf32>):
// CHECK-NEXT:       %w = "stablehlo.exponential"(%v_1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:       stablehlo.return %i_1, %w : tensor<i32>, tensor<2x3xf32>
// CHECK-NEXT:     }) : (tensor<i32>, tensor<2x3xf32>) -> (tensor<i32>, tensor<2x3xf32>)
// CHECK-NEXT:     %6 = "stablehlo.case"(%k) ({
// CHECK-NEXT:       stablehlo.return %x : tensor<2x3xf32>
// CHECK-NEXT:     }, {
// CHECK-NEXT:       %t = "stablehlo.tanh"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:       stablehlo.return %t : tensor<2x3xf32>
// CHECK-NEXT:     }) : (tensor<i32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %c0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:     %7 = "stablehlo.reduce_window"(%x, %c0) <{padding = dense<{{\[\[}}0, 0], [2, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 3>}> ({
// CHECK-NEXT:     ^bb0(%a: tensor<f32>, %c: tensor<f32>):
// CHECK-NEXT:       %s = stablehlo.add %a, %c : tensor<f32>
// CHECK-NEXT:       stablehlo.return %s : tensor<f32>
// CHECK-NEXT:     }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %8 = "stablehlo.sort"(%x) <{dimension = 1 : i64, is_stable = true}> ({
// CHECK-NEXT:     ^bb0(%a_1: tensor<f32>, %c_1: tensor<f32>):
// CHECK-NEXT:       %l = "stablehlo.compare"(%a_1, %c_1) <{comparison_direction = #stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type TOTALORDER>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NEXT:       stablehlo.return %l : tensor<i1>
// CHECK-NEXT:     }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %idx = stablehlo.constant dense<{{\[\[}}2], [0]]> : tensor<2x1xi32>
// CHECK-NEXT:     %9 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 1>}> : (tensor<2x3xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>
// CHECK-NEXT:     %one = stablehlo.constant dense<1> : tensor<1xi32>
// CHECK-NEXT:     %upd = stablehlo.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK-NEXT:     %10 = "stablehlo.scatter"(%x, %one, %upd) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [1], index_vector_dim = 0>}> ({
// CHECK-NEXT:     ^bb0(%a_2: tensor<f32>, %c_2: tensor<f32>):
// CHECK-NEXT:       %s_1 = stablehlo.add %a_2, %c_2 : tensor<f32>
// CHECK-NEXT:       stablehlo.return %s_1 : tensor<f32>
// CHECK-NEXT:     }) : (tensor<2x3xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     %pred = "stablehlo.compare"(%k, %k) <{comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type SIGNED>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:     %11 = "stablehlo.if"(%pred) ({
// CHECK-NEXT:       stablehlo.return %x : tensor<2x3xf32>
// CHECK-NEXT:     }, {
// CHECK-NEXT:       stablehlo.return %x : tensor<2x3xf32>
// CHECK-NEXT:     }) : (tensor<i1>) -> tensor<2x3xf32>
// CHECK-NEXT:     func.return %0 : tensor<2x4xf32>
// CHECK-NEXT:   }
