// RUN: purlin-opt %s --split-input-file --verify-diagnostics

// One case per verifier rule of tensor_coll.call, each with its exact message.

func.func @no_callee(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tensor_coll.call': no function @missing}}
  %0 = tensor_coll.call @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @plain(%a: memref<4xf32>, %b: memref<4xf32>) {
  return
}
func.func @not_coll(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tensor_coll.call': @plain is not a coll function (purlin.inputs and purlin.results)}}
  %0 = tensor_coll.call @plain(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sum(%a: memref<4xf32>, %b: memref<4xf32>) attributes {purlin.inputs = 1 : i64, purlin.results = 1 : i64} {
  coll.all_reduce sum %a, %b world 2 : memref<4xf32>, memref<4xf32>
  return
}
func.func @arity(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tensor_coll.call': @sum takes 1 inputs and gives 1 results, called with 2 and 1}}
  %0 = tensor_coll.call @sum(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sum(%a: memref<4xf32>, %b: memref<4xf32>) attributes {purlin.inputs = 1 : i64, purlin.results = 1 : i64} {
  coll.all_reduce sum %a, %b world 2 : memref<4xf32>, memref<4xf32>
  return
}
func.func @buffers(%x: tensor<2x2xf32>) {
  // expected-error@+1 {{'tensor_coll.call': result 0 (tensor<2xf32>) does not fit @sum's buffer memref<4xf32>}}
  %0 = tensor_coll.call @sum(%x) : (tensor<2x2xf32>) -> tensor<2xf32>
  return
}
