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
