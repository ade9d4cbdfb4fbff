// RUN: purlin-opt %s --split-input-file -p 'convert-stablehlo-to-coll{replicas=4 partitions=2}' | filecheck %s

// cross_replica: each partition's replicas; group-local rank = position.
func.func @all_reduce(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %c = stablehlo.xor %b, %a : tensor<i32>
      stablehlo.return %c : tensor<i32>
  }) {replica_groups = dense<[[0, 1], [3, 2]]> : tensor<2x2xi64>} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %r : tensor<2x3xi32>
}
// CHECK:      func.func @all_reduce(%x: memref<6xi32>, %result0: memref<6xi32>) attributes {purlin.inputs = 1 : i64, purlin.results = 1 : i64} {
// CHECK-NEXT:   coll.all_reduce xor %x, %result0 world 8 groups [[0, 2], [1, 3], [6, 4], [7, 5]] : memref<6xi32>, memref<6xi32>

// -----

// channel_handle > 0: cross_replica_and_partition, partition-major in a group
// (each partition's replicas in turn); along dimension 1 a strided named layout.
func.func @all_gather(%x: tensor<2x1xf32>) -> tensor<2x8xf32> {
  %r = stablehlo.all_gather(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>,
                                  channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>} : (tensor<2x1xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
// CHECK: coll.collective %x, %result0 in #coll.layout<named, world 8, [(0, 0, 1, (0, 0)), (0, 1, 1, (0, 1)), (1, 0, 1, (1, 0)),
// CHECK-SAME: out #coll.layout<named, world 8, [(0, 0, 1, (0, 0)), (1, 0, 1, (0, 0)),
// CHECK-SAME: (0, 8, 1, (0, 1)), (1, 8, 1, (0, 1))
// CHECK-SAME: consume #coll.consume<copy> world 8 groups [[0, 2, 4, 6, 1, 3, 5, 7]] : memref<2xf32>, memref<16xf32>

// -----

// flattened ids, along the leading dimension: the named collective.
func.func @reduce_scatter(%x: tensor<4x2xi64>) -> tensor<2x2xi64> {
  %r = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %c = stablehlo.minimum %a, %b : tensor<i64>
      stablehlo.return %c : tensor<i64>
  }) {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 7], [1, 6], [2, 5], [3, 4]]> : tensor<4x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>, use_global_device_ids} : (tensor<4x2xi64>) -> tensor<2x2xi64>
  return %r : tensor<2x2xi64>
}
// CHECK: coll.reduce_scatter min %x, %result0 world 8 groups [[0, 7], [1, 6], [2, 5], [3, 4]] : memref<8xi64>, memref<4xi64>

// -----

// Mesh axes, a sub-axis; variadic operands become one collective each.
func.func @mesh(%x: tensor<2xf32>, %y: tensor<3xbf16>) -> (tensor<2xf32>, tensor<3xbf16>) {
  %r:2 = "stablehlo.all_reduce"(%x, %y) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
  }) {replica_groups = #stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = "a", size = 2>, #stablehlo.mesh_axis<name = "b", size = 4>]>, axes = [#stablehlo.axis_ref<name = "b", sub_axis_info = (1)2>]>} : (tensor<2xf32>, tensor<3xbf16>) -> (tensor<2xf32>, tensor<3xbf16>)
  return %r#0, %r#1 : tensor<2xf32>, tensor<3xbf16>
}
// CHECK:      coll.all_reduce sum %x, %result0 world 8 groups [[0, 2], [1, 3], [4, 6], [5, 7]] : memref<2xf32>, memref<2xf32>
// CHECK-NEXT: coll.all_reduce sum %y, %result1 world 8 groups [[0, 2], [1, 3], [4, 6], [5, 7]] : memref<3xbf16>, memref<3xbf16>

// -----

// channel_handle > 0: pairs are partition ids within each replica; a chained
// collective reads the first one's result from a scratch buffer.
func.func @permute_then_broadcast(%x: tensor<4xf64>) -> tensor<4xf64> {
  %p = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>,
                                           channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>} : (tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.collective_broadcast"(%p) {replica_groups = dense<[[1, 0], [2, -1]]> : tensor<2x2xi64>} : (tensor<4xf64>) -> tensor<4xf64>
  return %b : tensor<4xf64>
}
// CHECK:      func.func @permute_then_broadcast(%x: memref<4xf64>, %result0: memref<4xf64>, %scratch0: memref<4xf64>)
// CHECK-NEXT:   coll.collective %x, %scratch0 in #coll.layout<named, world 2, [(0, 0, 4, 0)]> out #coll.layout<named, world 2, [(1, 0, 4, 0)]> consume #coll.consume<copy> world 8 groups [[0, 1], [2, 3], [4, 5], [6, 7]]
// CHECK-NEXT:   coll.collective %scratch0, %result0 in #coll.layout<named, world 1, [(0, 0, 4, 0)]> out #coll.layout<named, world 1, [(0, 0, 4, 0)]> consume #coll.consume<copy> world 8 groups [[4], [5]]
// CHECK-NEXT:   coll.collective %scratch0, %result0 in #coll.layout<named, world 2, [(0, 0, 4, 0)]> out #coll.layout<named, world 2, [(0, 0, 4, 0), (1, 0, 4, 0)]> consume #coll.consume<copy> world 8 groups [[2, 0], [3, 1]]

// -----

// all_to_all along other dimensions: a strided named layout; with a channel,
// the groups name partitions, within each replica.
func.func @all_to_all(%x: tensor<2x4xi8>) -> tensor<4x2xi8> {
  %r = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64,
                                   replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>,
                                   channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>} : (tensor<2x4xi8>) -> tensor<4x2xi8>
  return %r : tensor<4x2xi8>
}
// CHECK: coll.collective %x, %result0 in #coll.layout<named, world 2, [(0, 0, 2, (0, 0, 0)), (0, 4, 2, (0, 0, 1)), (0, 2, 2, (0, 1, 0)), (0, 6, 2, (0, 1, 1)),
// CHECK-SAME: consume #coll.consume<copy> world 8 groups [[1, 0], [3, 2], [5, 4], [7, 6]]
