// RUN: not purlin-opt %s --split-input-file -p 'convert-stablehlo-to-coll{replicas=4}' 2>&1 | filecheck %s
// RUN: not purlin-opt %s --split-input-file -p 'convert-stablehlo-to-coll' 2>&1 | filecheck %s --check-prefix=GRID

// Unsupported forms are one diagnostic each, naming the op and what is unsupported.

func.func @arbitrary_region(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.subtract %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: convert-stablehlo-to-coll-invalid.mlir:[[# @LINE - 7]]:3: error: 'stablehlo.all_reduce': an arbitrary reduction region is not supported: expected one of stablehlo.add, stablehlo.maximum, stablehlo.minimum, stablehlo.multiply, stablehlo.and, stablehlo.or, stablehlo.xor of the two block arguments, returned
// GRID: error: 'func.func': convert-stablehlo-to-coll: the number of replicas is not known; give the option replicas=N or the module attribute mhlo.num_replicas

// -----

func.func @bitwise_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.or %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 7]]:3: error: 'stablehlo.all_reduce': reduction 'or' combines bits and takes an integer dtype, got f32

// -----

func.func @dynamic_shape(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
// CHECK: error: 'func.func': dynamic shapes are not supported, got tensor<?xf32>; purlin needs static sizes

// -----

func.func @boolean(%x: tensor<4xi1>) -> tensor<4xi1> {
  %r = "stablehlo.collective_broadcast"(%x) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xi1>) -> tensor<4xi1>
  return %r : tensor<4xi1>
}
// CHECK: error: 'func.func': element type i1 is not supported, expected one of bf16, f16, f32, f8E4M3FN, f8E5M2, i8, ui8, i32, ui32, i64, ui64, f64

// -----

func.func @dynamic_root_operand(%x: tensor<4xf32>, %root: tensor<2xi32>) -> tensor<4xf32> {
  %r = "stablehlo.collective_broadcast"(%x, %root) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, has_dynamic_root} : (tensor<4xf32>, tensor<2xi32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.collective_broadcast': has_dynamic_root takes the data operands, then the roots: a tensor<1xi32>, one per data operand

// -----

func.func @dynamic_root_ragged(%x: tensor<4xf32>, %root: tensor<1xi32>) -> tensor<4xf32> {
  %r = "stablehlo.collective_broadcast"(%x, %root) {replica_groups = dense<[[0, 1, 2], [3, -1, -1]]> : tensor<2x3xi64>, has_dynamic_root} : (tensor<4xf32>, tensor<1xi32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.collective_broadcast': has_dynamic_root needs groups of one size, got sizes [1, 3]

// -----

func.func @split_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.all_to_all': split_count 4 must equal the group size 2

// -----

func.func @ragged_gather(%x: tensor<4xf32>) -> tensor<8xf32> {
  %r = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1], [2, -1]]> : tensor<2x2xi64>} : (tensor<4xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.all_gather': its groups have sizes [1, 2]; its result shape needs groups of one size

// -----

func.func @gather_shape(%x: tensor<4xf32>) -> tensor<12xf32> {
  %r = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<4xf32>) -> tensor<12xf32>
  return %r : tensor<12xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.all_gather': result shape [12] must be [8]: dimension 0 times the group size 2

// -----

func.func @replica_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.collective_broadcast"(%x) {replica_groups = dense<[[0, 4]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'stablehlo.collective_broadcast': replica_groups: replica id 4 is outside [0, 4)

// -----

func.func @global_ids_without_channel(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 7]]:3: error: 'stablehlo.all_reduce': replica_groups: use_global_device_ids needs a channel_handle with handle > 0

// -----

func.func @nested(%x: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {
  %r = "stablehlo.reduce"(%x, %c) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.collective_broadcast"(%a) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<f32>) -> tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}
// CHECK: [[# @LINE - 5]]:5: error: 'stablehlo.collective_broadcast': purlin imports collectives in the body of a function or of an sdy.manual_computation (or in the regions of a stablehlo.while, case or if there), not in the region of 'stablehlo.reduce'

// -----

sdy.mesh @two = <["x"=2]>
func.func @mesh_size(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.collective_broadcast"(%x) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
// CHECK: error: convert-stablehlo-to-coll: the module's sdy.mesh has 2 devices but its processes are 4 replicas x 1 partitions
