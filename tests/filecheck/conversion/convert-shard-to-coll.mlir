// RUN: purlin-opt %s -p convert-shard-to-coll | filecheck %s

// Devices of a 2 x 4 grid, row-major; grid_axes = [1] groups each row.
shard.grid @grid(shape = 2x4)

func.func @f(%x: tensor<4x2xi32>) -> (tensor<4x2xi32>, tensor<4x4xi32>, tensor<4x1xi32>, tensor<4x2xi32>) {
  %s = shard.all_reduce %x on @grid grid_axes = [1] reduction = max : tensor<4x2xi32> -> tensor<4x2xi32>
  %g = shard.all_gather %s on @grid grid_axes = [0] gather_axis = 1 : tensor<4x2xi32> -> tensor<4x4xi32>
  %r = shard.reduce_scatter %x on @grid grid_axes = [0] reduction = bitwise_xor scatter_axis = 1 : tensor<4x2xi32> -> tensor<4x1xi32>
  %a = shard.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<4x2xi32> -> tensor<4x2xi32>
  func.return %s, %g, %r, %a : tensor<4x2xi32>, tensor<4x4xi32>, tensor<4x1xi32>, tensor<4x2xi32>
}
// CHECK:      coll.all_reduce max %x, %result0 world 8 groups [[0, 1, 2, 3], [4, 5, 6, 7]] : memref<8xi32>, memref<8xi32>
// CHECK-NEXT: coll.collective %result0, %result1 in #coll.layout<named, world 2, [(0, 0, 2, (0, 0)), (0, 2, 2, (0, 1))
// CHECK-SAME: world 8 groups [[0, 4], [1, 5], [2, 6], [3, 7]]
// CHECK-NEXT: coll.collective %x, %result2 {{.*}} consume #coll.consume<reduce xor> world 8 groups [[0, 4], [1, 5], [2, 6], [3, 7]]
// CHECK-NEXT: coll.all_to_all %x, %result3 world 8 groups [[0, 4], [1, 5], [2, 6], [3, 7]] : memref<8xi32>, memref<8xi32>
