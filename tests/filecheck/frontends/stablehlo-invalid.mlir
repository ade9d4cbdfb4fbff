// RUN: purlin-opt %s --split-input-file --verify-diagnostics

// One case per verifier rule of the StableHLO tensor ops purlin parses, each
// with its exact message.

func.func @binary_arity(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.add': takes two operands and gives one result}}
  %0 = "stablehlo.add"(%x, %x, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @binary_shapes(%x: tensor<2xf32>, %y: tensor<3xf32>) {
  // expected-error@+1 {{'stablehlo.multiply': operands and result must be tensors of one shape, got tensor<2xf32>, tensor<3xf32>, tensor<2xf32>}}
  %0 = stablehlo.multiply %x, %y : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @unary_arity(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.negate': takes one operand and gives one result}}
  %0 = "stablehlo.negate"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @unary_shape(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.convert': the result must be a tensor of the operand's shape, got tensor<2xf32> -> tensor<3xi32>}}
  %0 = stablehlo.convert %x : (tensor<2xf32>) -> tensor<3xi32>
  return
}

// -----

func.func @reshape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.reshape': the result must hold the operand's elements, got tensor<2x3xf32> -> tensor<5xf32>}}
  %0 = stablehlo.reshape %x : (tensor<2x3xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @broadcast_dims(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.broadcast_in_dim': needs tensors and one broadcast dimension per operand dimension, got [0] for tensor<2x3xf32>}}
  %0 = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.broadcast_in_dim': operand dimension 1 (size 3) cannot be result dimension 1 of tensor<2x4xf32>}}
  %0 = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @transpose_permutation(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.transpose': the permutation [0, 0] must order the operand's 2 dimensions}}
  %0 = stablehlo.transpose %x, dims = [0, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.transpose': the result must be [3, 2], got tensor<2x3xf32>}}
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.slice': start:limit:stride ['2:5:1'] must lie in tensor<4xf32>}}
  %0 = stablehlo.slice %x [2:5] : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @slice_shape(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.slice': the result must be [2], got tensor<3xf32>}}
  %0 = stablehlo.slice %x [0:4:2] : (tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @dynamic_slice_sizes(%x: tensor<4xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.dynamic_slice': needs one start index and one size (at most the dimension) per dimension of tensor<4xf32>, got sizes [5]}}
  %0 = stablehlo.dynamic_slice %x, %i, sizes = [5] : (tensor<4xf32>, tensor<i32>) -> tensor<5xf32>
  return
}

// -----

func.func @dynamic_slice_shape(%x: tensor<4xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.dynamic_slice': the result must be [2]}}
  %0 = stablehlo.dynamic_slice %x, %i, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<3xf32>
  return
}

// -----

func.func @concatenate_dimension(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.concatenate': dimension 1 must be a dimension of every operand}}
  %0 = stablehlo.concatenate %x, %x, dim = 1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concatenate_shapes(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) {
  // expected-error@+1 {{'stablehlo.concatenate': operands must agree but along dimension 0, the result being [4, 3]}}
  %0 = stablehlo.concatenate %x, %y, dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @iota() {
  // expected-error@+1 {{'stablehlo.iota': iota_dimension 1 must be a dimension of tensor<4xi32>}}
  %0 = stablehlo.iota dim = 1 : tensor<4xi32>
  return
}

// -----

func.func @compare_direction(%x: tensor<4xi32>) {
  // expected-error@+1 {{'stablehlo.compare': needs a comparison_direction}}
  %0 = "stablehlo.compare"(%x, %x) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_result(%x: tensor<4xi32>) {
  // expected-error@+1 {{'stablehlo.compare': gives i1 of the operands' shape, got tensor<4xi32>}}
  %0 = stablehlo.compare EQ, %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @clamp(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.clamp': takes min, operand and max}}
  %0 = stablehlo.clamp %x, %x : tensor<4xf32>
  return
}

// -----

func.func @reduce_inits(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.reduce': takes one init value per operand and gives one result each}}
  %0 = "stablehlo.reduce"(%x) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %a : tensor<f32>
  }) : (tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @reduce_dimensions(%x: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.reduce': dimensions [1] must be distinct dimensions of tensor<4xf32>}}
  %0 = stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_region(%x: tensor<4xf32>, %c: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.reduce': needs its reduction region}}
  %0 = "stablehlo.reduce"(%x, %c) <{dimensions = array<i64: 0>}> : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @custom_call_target(%x: tensor<4xf32>) {
  // expected-error@+1 {{'stablehlo.custom_call': needs a call_target_name}}
  %0 = "stablehlo.custom_call"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @dot_arity(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.dot_general': takes two operands and gives one result}}
  %0 = "stablehlo.dot_general"(%x, %x, %x) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>}> : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @dot_numbers(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.dot_general': needs its dot_dimension_numbers}}
  %0 = "stablehlo.dot_general"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @dot_dims(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.dot_general': batching dimensions [] x [] and contracting dimensions [1] x [2] must be distinct dimensions of tensor<2x3xf32> and tensor<2x3xf32>, as many on each side}}
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [2] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @dot_sizes(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.dot_general': paired batching and contracting dimensions must have one size}}
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @dot_result(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.dot_general': the result must be [2, 2], got tensor<3x3xf32>}}
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @dot_field(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{unknown field 'contracting' of stablehlo.dot_general, expected batching_dims, contracting_dims, precision or algorithm}}
  %0 = stablehlo.dot_general %x, %x, contracting = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @update_slice_operands(%x: tensor<2x3xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.dynamic_update_slice': takes an operand, an update of its rank no larger, and one start index per dimension}}
  %0 = stablehlo.dynamic_update_slice %x, %x, %i : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @update_slice_result(%x: tensor<2x3xf32>, %i: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.dynamic_update_slice': the result must be of the operand's type tensor<2x3xf32>}}
  %0 = stablehlo.dynamic_update_slice %x, %x, %i, %i : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @pad_value(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.pad': takes an operand and a rank-0 padding value}}
  %0 = stablehlo.pad %x, %x, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @pad_dims(%x: tensor<2x3xf32>, %v: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.pad': needs low, high and interior (not negative) padding per dimension of tensor<2x3xf32>}}
  %0 = stablehlo.pad %x, %v, low = [0, 0], high = [0, 0], interior = [0, -1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @pad_result(%x: tensor<2x3xf32>, %v: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.pad': the result must be [3, 5], got tensor<2x3xf32>}}
  %0 = stablehlo.pad %x, %v, low = [1, 0], high = [0, 0], interior = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @window_inits(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.reduce_window': takes one init value per operand and gives one result each}}
  %0 = "stablehlo.reduce_window"(%x) <{window_dimensions = array<i64: 1, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %a : tensor<f32>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @window_shapes(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.reduce_window': operands must be tensors of one shape, the init values rank 0}}
  %0 = "stablehlo.reduce_window"(%x, %x) <{window_dimensions = array<i64: 1, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %a : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @window_sizes(%x: tensor<2x3xf32>, %c: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.reduce_window': needs a positive window size, stride and dilations per dimension of tensor<2x3xf32>}}
  %0 = "stablehlo.reduce_window"(%x, %c) <{window_dimensions = array<i64: 1, 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %a : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @window_result(%x: tensor<2x3xf32>, %c: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.reduce_window': results must be [2, 2]}}
  %0 = "stablehlo.reduce_window"(%x, %c) <{window_dimensions = array<i64: 1, 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %a : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @window_region(%x: tensor<2x3xf32>, %c: tensor<f32>) {
  // expected-error@+1 {{'stablehlo.reduce_window': needs its reduction region}}
  %0 = "stablehlo.reduce_window"(%x, %c) <{window_dimensions = array<i64: 1, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @sort_types(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.sort': takes tensors of one shape and gives results of their types}}
  %0 = "stablehlo.sort"(%x) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %l = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %l : tensor<i1>
  }) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @sort_dimension(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.sort': dimension 2 must be a dimension of tensor<2x3xf32>}}
  %0 = "stablehlo.sort"(%x) <{dimension = 2 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %l = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %l : tensor<i1>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @sort_region(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.sort': needs its comparator region}}
  %0 = "stablehlo.sort"(%x) <{dimension = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @while_results(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.while': its results must be of its operands' types}}
  %0 = "stablehlo.while"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  }, {
  ^bb0(%a: tensor<2xf32>):
    stablehlo.return %a : tensor<2xf32>
  }) : (tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @while_arguments(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.while': its body must take its operands' types}}
  %0 = "stablehlo.while"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  }, {
  ^bb0(%a: tensor<3xf32>):
    stablehlo.return %x : tensor<2xf32>
  }) : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @while_cond(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.while': its cond must return tensor<i1>}}
  %0 = stablehlo.while(%a = %x) : tensor<2xf32>
  cond {
    stablehlo.return %a : tensor<2xf32>
  } do {
    stablehlo.return %a : tensor<2xf32>
  }
  return
}

// -----

func.func @while_body(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.while': its body must return tensor<2xf32>}}
  %0 = stablehlo.while(%a = %x) : tensor<2xf32>
  cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    stablehlo.return
  }
  return
}

// -----

func.func @while_regions(%x: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.while': needs a cond and a body region}}
  %0 = "stablehlo.while"(%x) ({
  }, {
  }) : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case_index(%x: tensor<2xf32>, %k: tensor<i64>) {
  // expected-error@+1 {{'stablehlo.case': takes one index, a tensor<i32>}}
  %0 = "stablehlo.case"(%k) ({
    stablehlo.return %x : tensor<2xf32>
  }) : (tensor<i64>) -> tensor<2xf32>
  return
}

// -----

func.func @case_branches(%k: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.case': needs a branch}}
  "stablehlo.case"(%k) : (tensor<i32>) -> ()
  return
}

// -----

func.func @case_arguments(%x: tensor<2xf32>, %k: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.case': branch 0 takes no arguments}}
  %0 = "stablehlo.case"(%k) ({
  ^bb0(%a: tensor<2xf32>):
    stablehlo.return %a : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  return
}

// -----

func.func @case_returns(%x: tensor<2xf32>, %k: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.case': its branch 1 must return tensor<2xf32>}}
  %0 = "stablehlo.case"(%k) ({
    stablehlo.return %x : tensor<2xf32>
  }, {
    stablehlo.return %k : tensor<i32>
  }) : (tensor<i32>) -> tensor<2xf32>
  return
}

// -----

func.func @if_predicate(%x: tensor<2xf32>, %k: tensor<i32>) {
  // expected-error@+1 {{'stablehlo.if': takes one predicate, a tensor<i1>}}
  %0 = "stablehlo.if"(%k) ({
    stablehlo.return %x : tensor<2xf32>
  }, {
    stablehlo.return %x : tensor<2xf32>
  }) : (tensor<i32>) -> tensor<2xf32>
  return
}

// -----

func.func @if_returns(%x: tensor<2xf32>, %p: tensor<i1>) {
  // expected-error@+1 {{'stablehlo.if': its false branch must return tensor<2xf32>}}
  %0 = "stablehlo.if"(%p) ({
    stablehlo.return %x : tensor<2xf32>
  }, {
    stablehlo.return %p : tensor<i1>
  }) : (tensor<i1>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_operands(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'stablehlo.gather': takes an operand and indices}}
  %0 = "stablehlo.gather"(%x) <{slice_sizes = array<i64: 1, 1>}> : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_numbers(%x: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // expected-error@+1 {{'stablehlo.gather': needs its dimension_numbers, a #stablehlo.gather}}
  %0 = "stablehlo.gather"(%x, %i) <{slice_sizes = array<i64: 1, 1>}> : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @gather_sizes(%x: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // expected-error@+1 {{'stablehlo.gather': slice_sizes [1, 4], collapsed_slice_dims and start_index_map must fit tensor<2x3xf32> and indices tensor<1xi32>}}
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, slice_sizes = array<i64: 1, 4>}> : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @gather_offsets(%x: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // expected-error@+1 {{'stablehlo.gather': offset_dims [] must be 1 increasing dimensions of the result}}
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], start_index_map = [1]>, slice_sizes = array<i64: 1, 1>}> : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @gather_result(%x: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // expected-error@+1 {{'stablehlo.gather': the result must be [2], got tensor<1xf32>}}
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, slice_sizes = array<i64: 2, 1>}> : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<1xf32>
  return
}

// -----

func.func @scatter_operands(%x: tensor<2x3xf32>, %i: tensor<1xi32>) {
  // expected-error@+1 {{'stablehlo.scatter': takes operands, indices and one update per operand, and gives results of the operands' types}}
  %0 = "stablehlo.scatter"(%x, %i) <{scatter_dimension_numbers = #stablehlo.scatter<index_vector_dim = 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<1xi32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @scatter_numbers(%x: tensor<2x3xf32>, %i: tensor<1xi32>, %u: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.scatter': needs its scatter_dimension_numbers, a #stablehlo.scatter}}
  %0 = "stablehlo.scatter"(%x, %i, %u) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @scatter_dims(%x: tensor<2x3xf32>, %i: tensor<1xi32>, %u: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.scatter': update_window_dims, inserted_window_dims and scatter_dims_to_operand_dims must fit tensor<2x3xf32>, indices tensor<1xi32> and updates tensor<2xf32>}}
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], scatter_dims_to_operand_dims = [1]>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<2x3xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @scatter_region(%x: tensor<2x3xf32>, %i: tensor<1xi32>, %u: tensor<2xf32>) {
  // expected-error@+1 {{'stablehlo.scatter': needs its combiner region}}
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>}> : (tensor<2x3xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reducer_pairs(%x: tensor<2x3xf32>, %c: tensor<f32>) {
  // expected-error@+2 {{the reducer takes 1 (accumulator, element) pairs, one per operand}}
  %0 = stablehlo.reduce(%x init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
   reducer(%a: tensor<f32>) (%b: tensor<f32>) {
    stablehlo.return %a : tensor<f32>
  }
  return
}
