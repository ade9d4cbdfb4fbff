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
