// StableHLO collectives in the format of StableHLO's interpreter tests, imported
// with convert-stablehlo-to-coll and run on one rank per process:
//   purlin-run examples/stablehlo_collectives.mlir --backend cpu
// (the module attributes give purlin-opt the process grid; purlin-run takes it
// from the programs).

module @grouped_all_reduce attributes {mhlo.num_replicas = 8 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @grouped_all_reduce(%x: tensor<2xi32>) -> tensor<2xi32> {
    %r = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i32>, %b: tensor<i32>):
        %c = stablehlo.add %a, %b : tensor<i32>
        stablehlo.return %c : tensor<i32>
    }) {
      replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>
    } : (tensor<2xi32>) -> tensor<2xi32>
    return %r : tensor<2xi32>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[0, 0]> : tensor<2xi32>
    %p1 = stablehlo.constant dense<[1, 10]> : tensor<2xi32>
    %p2 = stablehlo.constant dense<[2, 20]> : tensor<2xi32>
    %p3 = stablehlo.constant dense<[3, 30]> : tensor<2xi32>
    %p4 = stablehlo.constant dense<[4, 40]> : tensor<2xi32>
    %p5 = stablehlo.constant dense<[5, 50]> : tensor<2xi32>
    %p6 = stablehlo.constant dense<[6, 60]> : tensor<2xi32>
    %p7 = stablehlo.constant dense<[7, 70]> : tensor<2xi32>
    %results:8 = "interpreter.run_parallel"(%p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7) {
      programs = [[@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce], [@grouped_all_reduce]]
    } : (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)
    check.expect_eq_const %results#0, dense<[6, 60]> : tensor<2xi32>
    check.expect_eq_const %results#1, dense<[6, 60]> : tensor<2xi32>
    check.expect_eq_const %results#2, dense<[6, 60]> : tensor<2xi32>
    check.expect_eq_const %results#3, dense<[6, 60]> : tensor<2xi32>
    check.expect_eq_const %results#4, dense<[22, 220]> : tensor<2xi32>
    check.expect_eq_const %results#5, dense<[22, 220]> : tensor<2xi32>
    check.expect_eq_const %results#6, dense<[22, 220]> : tensor<2xi32>
    check.expect_eq_const %results#7, dense<[22, 220]> : tensor<2xi32>
    func.return
  }
}

// -----

module @all_gather_dim1 attributes {mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @all_gather_dim1(%x: tensor<2x1xf32>) -> tensor<2x2xf32> {
    %r = stablehlo.all_gather(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1], [3, 2]]> : tensor<2x2xi64>} : (tensor<2x1xf32>) -> tensor<2x2xf32>
    return %r : tensor<2x2xf32>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
    %p1 = stablehlo.constant dense<[[3.0], [4.0]]> : tensor<2x1xf32>
    %p2 = stablehlo.constant dense<[[5.0], [6.0]]> : tensor<2x1xf32>
    %p3 = stablehlo.constant dense<[[7.0], [8.0]]> : tensor<2x1xf32>
    %results:4 = "interpreter.run_parallel"(%p0, %p1, %p2, %p3) {
      programs = [[@all_gather_dim1], [@all_gather_dim1], [@all_gather_dim1], [@all_gather_dim1]]
    } : (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    check.expect_eq_const %results#0, dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
    check.expect_eq_const %results#1, dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
    check.expect_eq_const %results#2, dense<[[7.0, 5.0], [8.0, 6.0]]> : tensor<2x2xf32>
    check.expect_eq_const %results#3, dense<[[7.0, 5.0], [8.0, 6.0]]> : tensor<2x2xf32>
    func.return
  }
}

// -----

module @reduce_scatter_dim1 attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @reduce_scatter_dim1(%x: tensor<2x2xi64>) -> tensor<2x1xi64> {
    %r = "stablehlo.reduce_scatter"(%x) ({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %c = stablehlo.maximum %a, %b : tensor<i64>
        stablehlo.return %c : tensor<i64>
    }) {
      scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2x2xi64>) -> tensor<2x1xi64>
    return %r : tensor<2x1xi64>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[[1, 8], [3, 0]]> : tensor<2x2xi64>
    %p1 = stablehlo.constant dense<[[5, 2], [7, 4]]> : tensor<2x2xi64>
    %results:2 = "interpreter.run_parallel"(%p0, %p1) {
      programs = [[@reduce_scatter_dim1], [@reduce_scatter_dim1]]
    } : (tensor<2x2xi64>, tensor<2x2xi64>) -> (tensor<2x1xi64>, tensor<2x1xi64>)
    check.expect_eq_const %results#0, dense<[[5], [7]]> : tensor<2x1xi64>
    check.expect_eq_const %results#1, dense<[[8], [4]]> : tensor<2x1xi64>
    func.return
  }
}

// -----

module @all_to_all_across_partitions attributes {mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 2 : i32} {
  func.func @all_to_all_across_partitions(%x: tensor<2x4xui8>) -> tensor<4x2xui8> {
    %r = "stablehlo.all_to_all"(%x) {
      split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>
    } : (tensor<2x4xui8>) -> tensor<4x2xui8>
    return %r : tensor<4x2xui8>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xui8>
    %p1 = stablehlo.constant dense<[[10, 11, 12, 13], [14, 15, 16, 17]]> : tensor<2x4xui8>
    %results:2 = "interpreter.run_parallel"(%p0, %p1) {
      programs = [[@all_to_all_across_partitions, @all_to_all_across_partitions]]
    } : (tensor<2x4xui8>, tensor<2x4xui8>) -> (tensor<4x2xui8>, tensor<4x2xui8>)
    check.expect_eq_const %results#0, dense<[[0, 1], [4, 5], [10, 11], [14, 15]]> : tensor<4x2xui8>
    check.expect_eq_const %results#1, dense<[[2, 3], [6, 7], [12, 13], [16, 17]]> : tensor<4x2xui8>
    func.return
  }
}

// -----

module @collective_permute attributes {mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @collective_permute(%x: tensor<2xf64>) -> tensor<2xf64> {
    %r = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 2], [2, 0], [3, 3]]> : tensor<3x2xi64>
    } : (tensor<2xf64>) -> tensor<2xf64>
    return %r : tensor<2xf64>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[0.5, 1.0]> : tensor<2xf64>
    %p1 = stablehlo.constant dense<[1.5, 2.0]> : tensor<2xf64>
    %p2 = stablehlo.constant dense<[2.5, 3.0]> : tensor<2xf64>
    %p3 = stablehlo.constant dense<[3.5, 4.0]> : tensor<2xf64>
    %results:4 = "interpreter.run_parallel"(%p0, %p1, %p2, %p3) {
      programs = [[@collective_permute], [@collective_permute], [@collective_permute], [@collective_permute]]
    } : (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>)
    check.expect_eq_const %results#0, dense<[2.5, 3.0]> : tensor<2xf64>
    check.expect_eq_const %results#1, dense<[0.0, 0.0]> : tensor<2xf64>
    check.expect_eq_const %results#2, dense<[0.5, 1.0]> : tensor<2xf64>
    check.expect_eq_const %results#3, dense<[3.5, 4.0]> : tensor<2xf64>
    func.return
  }
}

// -----

module @collective_broadcast attributes {mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @collective_broadcast(%x: tensor<1x2xbf16>) -> tensor<1x2xbf16> {
    %r = "stablehlo.collective_broadcast"(%x) {
      replica_groups = dense<[[2, 1]]> : tensor<1x2xi64>
    } : (tensor<1x2xbf16>) -> tensor<1x2xbf16>
    return %r : tensor<1x2xbf16>
  }
  func.func @main() {
    %p0 = stablehlo.constant dense<[[0.0, 0.25]]> : tensor<1x2xbf16>
    %p1 = stablehlo.constant dense<[[1.0, 1.25]]> : tensor<1x2xbf16>
    %p2 = stablehlo.constant dense<[[2.0, 2.25]]> : tensor<1x2xbf16>
    %p3 = stablehlo.constant dense<[[3.0, 3.25]]> : tensor<1x2xbf16>
    %results:4 = "interpreter.run_parallel"(%p0, %p1, %p2, %p3) {
      programs = [[@collective_broadcast], [@collective_broadcast], [@collective_broadcast], [@collective_broadcast]]
    } : (tensor<1x2xbf16>, tensor<1x2xbf16>, tensor<1x2xbf16>, tensor<1x2xbf16>) -> (tensor<1x2xbf16>, tensor<1x2xbf16>, tensor<1x2xbf16>, tensor<1x2xbf16>)
    check.expect_eq_const %results#0, dense<[[0.0, 0.0]]> : tensor<1x2xbf16>
    check.expect_eq_const %results#1, dense<[[2.0, 2.25]]> : tensor<1x2xbf16>
    check.expect_eq_const %results#2, dense<[[2.0, 2.25]]> : tensor<1x2xbf16>
    check.expect_eq_const %results#3, dense<[[0.0, 0.0]]> : tensor<1x2xbf16>
    func.return
  }
}
