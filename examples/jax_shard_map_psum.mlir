module @jit__scaled_psum attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x3xbf16>) -> (tensor<4x3xbf16> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", "y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%arg1: tensor<2x3xbf16>) {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<bf16>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<2x3xbf16>
      %2 = stablehlo.multiply %arg1, %1 : tensor<2x3xbf16>
      %3 = "stablehlo.all_reduce"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<bf16>, %arg3: tensor<bf16>):
        %6 = stablehlo.add %arg2, %arg3 : tensor<bf16>
        stablehlo.return %6 : tensor<bf16>
      }) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
      %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
      %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<2x3xbf16>
      %5 = stablehlo.subtract %3, %4 : tensor<2x3xbf16>
      sdy.return %5 : tensor<2x3xbf16>
    } : (tensor<16x3xbf16>) -> tensor<4x3xbf16>
    return %0 : tensor<4x3xbf16>
  }
}
