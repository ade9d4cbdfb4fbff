// RUN: not purlin-opt %s --split-input-file -p convert-shard-to-coll 2>&1 | filecheck %s

shard.grid @grid(shape = 2x4)
func.func @average(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @grid grid_axes = [1] reduction = average : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: convert-shard-to-coll-invalid.mlir:[[# @LINE - 3]]:3: error: 'shard.all_reduce': reduction 'average' is not supported, expected one of sum, max, min, product, bitwise_and, bitwise_or, bitwise_xor

// -----

shard.grid @grid(shape = 2x4)
func.func @axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @grid grid_axes = [2] : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'shard.all_reduce': grid axis 2 is outside the grid's 2 axes

// -----

func.func @no_grid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @nowhere grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'shard.all_reduce': no shard.grid @nowhere in the module

// -----

shard.grid @grid(shape = 2x4)
func.func @gather_shape(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'shard.all_gather': result shape [4] must be [16]

// -----

shard.grid @grid(shape = 2x4)
func.func @shift(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.shift %x on @grid grid_axes = [1] shift_axis = 1 offset = 1 rotate : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// CHECK: [[# @LINE - 3]]:3: error: 'shard.shift': is not a collective purlin imports: expected shard.all_reduce, all_gather, all_slice, all_to_all or reduce_scatter
