// A shard module on a 2 x 4 grid: reduce over grid axis 1 (the four devices
// of each row), then gather the row sums over axis 0 along tensor dimension 1.
//   purlin-run examples/shard_grid.mlir --backend cpu

shard.grid @grid(shape = 2x4)

func.func @row_sums(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x4xf32>) {
  %sum = shard.all_reduce %x on @grid grid_axes = [1] reduction = sum : tensor<4x2xf32> -> tensor<4x2xf32>
  %both = shard.all_gather %sum on @grid grid_axes = [0] gather_axis = 1 : tensor<4x2xf32> -> tensor<4x4xf32>
  func.return %sum, %both : tensor<4x2xf32>, tensor<4x4xf32>
}
