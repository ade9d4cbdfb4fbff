// RUN: purlin-run %s --backend cpu | filecheck %s
// RUN: purlin-run %s --level snac | filecheck %s
// RUN: not purlin-opt %s -p convert-stablehlo-to-coll 2>&1 | filecheck %s --check-prefix=WHOLE
// RUN: purlin-opt %s --split-input-file -p 'convert-stablehlo-to-coll{replicas=4}' | filecheck %s --check-prefix=SPLIT

// StableHLO's interpreter-test format, run by purlin: process groups by
// mesh axes, ragged groups and variadic operands; every expectation checked.
// Without --split-input-file purlin-opt sees one module around both: the
// diagnostic says so, not only that the number of replicas is not known.
// WHOLE: run-stablehlo.mlir:15:3: error: 'func.func': convert-stablehlo-to-coll: the number of replicas is not known; the input holds 2 modules and mhlo.num_replicas is read from the one module around them, which has none; split the input (--split-input-file, {{.*}} between the modules) or give the option replicas=N
// SPLIT: coll.all_reduce prod %x, %result0 world 4 groups
// SPLIT: coll.all_reduce sum %x, %result0 world 4 groups

module @mesh_axes {
  func.func @f(%x: tensor<1xi32>) -> tensor<1xi32> {
    %r = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i32>, %b: tensor<i32>):
        %c = stablehlo.multiply %a, %b : tensor<i32>
        stablehlo.return %c : tensor<i32>
    }) {replica_groups = #stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = "p", size = 2>, #stablehlo.mesh_axis<name = "q", size = 2>]>, axes = [#stablehlo.axis_ref<name = "p">]>} : (tensor<1xi32>) -> tensor<1xi32>
    return %r : tensor<1xi32>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[2]> : tensor<1xi32>
    %b = stablehlo.constant dense<[3]> : tensor<1xi32>
    %c = stablehlo.constant dense<[5]> : tensor<1xi32>
    %d = stablehlo.constant dense<[7]> : tensor<1xi32>
    %r:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {programs = [[@f], [@f], [@f], [@f]]} : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>)
    check.expect_eq_const %r#0, dense<[10]> : tensor<1xi32>
    check.expect_eq_const %r#1, dense<[21]> : tensor<1xi32>
    check.expect_eq_const %r#2, dense<[10]> : tensor<1xi32>
    check.expect_eq_const %r#3, dense<[21]> : tensor<1xi32>
    func.return
  }
}
// CHECK: run-stablehlo.mlir:1 @mesh_axes (4x1 processes) world=4 {{.*}} expectations=4 result=match

// -----

module @variadic_ragged {
  func.func @f(%x: tensor<2xi8>, %y: tensor<1xf32>) -> (tensor<2xi8>, tensor<1xf32>) {
    %r:2 = "stablehlo.all_reduce"(%x, %y) ({
      ^bb0(%a: tensor<i8>, %b: tensor<i8>):
        %c = stablehlo.add %a, %b : tensor<i8>
        stablehlo.return %c : tensor<i8>
    }) {replica_groups = dense<[[2, 0], [1, -1]]> : tensor<2x2xi64>} : (tensor<2xi8>, tensor<1xf32>) -> (tensor<2xi8>, tensor<1xf32>)
    return %r#0, %r#1 : tensor<2xi8>, tensor<1xf32>
  }
  func.func @main() {
    %x0 = stablehlo.constant dense<[100, 1]> : tensor<2xi8>
    %y0 = stablehlo.constant dense<[1.5]> : tensor<1xf32>
    %x1 = stablehlo.constant dense<[7, 8]> : tensor<2xi8>
    %y1 = stablehlo.constant dense<[2.0]> : tensor<1xf32>
    %x2 = stablehlo.constant dense<[100, -3]> : tensor<2xi8>
    %y2 = stablehlo.constant dense<[4.0]> : tensor<1xf32>
    %r:6 = "interpreter.run_parallel"(%x0, %y0, %x1, %y1, %x2, %y2) {programs = [[@f], [@f], [@f]]} : (tensor<2xi8>, tensor<1xf32>, tensor<2xi8>, tensor<1xf32>, tensor<2xi8>, tensor<1xf32>) -> (tensor<2xi8>, tensor<1xf32>, tensor<2xi8>, tensor<1xf32>, tensor<2xi8>, tensor<1xf32>)
    check.expect_eq_const %r#0, dense<[-56, -2]> : tensor<2xi8>
    check.expect_eq_const %r#1, dense<[5.5]> : tensor<1xf32>
    check.expect_eq_const %r#2, dense<[7, 8]> : tensor<2xi8>
    check.expect_eq_const %r#3, dense<[2.0]> : tensor<1xf32>
    check.expect_eq_const %r#4, dense<[-56, -2]> : tensor<2xi8>
    check.expect_eq_const %r#5, dense<[5.5]> : tensor<1xf32>
    func.return
  }
}
// CHECK: run-stablehlo.mlir:39 @variadic_ragged (3x1 processes) world=3 {{.*}} expectations=6 result=match
