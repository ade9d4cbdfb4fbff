// RUN: purlin-opt %s | filecheck %s
// RUN: purlin-opt %s | purlin-opt | filecheck %s

// The sdy ops and attributes JAX prints, pretty form in, generic form out
// (which parses back to the same): meshes with and without device ids,
// shardings with open and sub-axis dimensions, priorities and replicated
// axes, a manual computation, constraints on a named and an inline mesh.

sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
sdy.mesh @ids = <["a"=2], device_ids=[1, 0]>
sdy.mesh @empty = <[]>
// CHECK:      "sdy.mesh"() <{sym_name = "mesh", mesh = #sdy.mesh<["x"=2, "y"=4]>}> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}} : () -> ()
// CHECK-NEXT: "sdy.mesh"() <{sym_name = "ids", mesh = #sdy.mesh<["a"=2], device_ids=[1, 0]>}> : () -> ()
// CHECK-NEXT: "sdy.mesh"() <{sym_name = "empty", mesh = #sdy.mesh<[]>}> : () -> ()

func.func @f(%x: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y":(1)2}p1], replicated={"y":(2)2}>}) -> tensor<4x8xf32> {
  %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{}, {"y"}]>] manual_axes={"x", "y"} (%l: tensor<4x2xf32>) {
    %c = sdy.sharding_constraint %l <@mesh, [{}, {?}]> : tensor<4x2xf32>
    sdy.return %c : tensor<4x2xf32>
  } : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = sdy.reshard %0 <mesh<["z"=2]>, [{"z"}, {}]> : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
// CHECK:      func.func @f(%x: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y":(1)2}p1], replicated={"y":(2)2}>}) -> tensor<4x8xf32> {
// CHECK-NEXT:   %0 = "sdy.manual_computation"(%x) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {"y"}]>]>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{}, {"y"}]>]>, manual_axes = #sdy<manual_axes{"x", "y"}>}> ({
// CHECK-NEXT:   ^bb0(%l: tensor<4x2xf32>):
// CHECK-NEXT:     %c = "sdy.sharding_constraint"(%l) <{sharding = #sdy.sharding<@mesh, [{}, {?}]>}> : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:     "sdy.return"(%c) : (tensor<4x2xf32>) -> ()
// CHECK-NEXT:   }) : (tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:   %1 = "sdy.reshard"(%0) <{sharding = #sdy.sharding<mesh<["z"=2]>, [{"z"}, {}]>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
