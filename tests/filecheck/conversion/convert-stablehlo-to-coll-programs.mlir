// RUN: purlin-opt %s --split-input-file -p convert-stablehlo-to-coll | filecheck %s
// RUN: purlin-opt %s --split-input-file -p convert-stablehlo-to-coll | purlin-opt --split-input-file | filecheck %s
// RUN: purlin-opt %s --split-input-file -p convert-stablehlo-to-coll,coll-expand,convert-coll-to-snac,snac-verify | filecheck %s --check-prefix=LOWERED

// Programs in tensor form, as JAX writes them: each run of collectives (with
// the views between them) becomes a coll function called where the run was;
// what else the program does stays. The whole pipeline then lowers the coll
// functions and leaves the rest.
// LOWERED-COUNT-9: snac.program
// LOWERED-NOT: coll.

// Shardy: the body of the manual computation is the program; a pmean in it.
module @shardy attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @grid = <["a"=2, "b"=2]>
  func.func public @main(%g: tensor<4x6xf32>) -> tensor<2x6xf32> {
    %0 = sdy.manual_computation(%g) in_shardings=[<@grid, [{"a"}, {"b"}]>] out_shardings=[<@grid, [{}, {"b"}]>] manual_axes={"a", "b"} (%l: tensor<2x3xf32>) {
      %s = "stablehlo.all_reduce"(%l) <{replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %t = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %two = stablehlo.constant dense<2.0> : tensor<f32>
      %n = stablehlo.broadcast_in_dim %two, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %m = stablehlo.divide %s, %n : tensor<2x3xf32>
      sdy.return %m : tensor<2x3xf32>
    } : (tensor<4x6xf32>) -> tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
}
// CHECK-LABEL: builtin.module @shardy
// CHECK:      "sdy.mesh"() <{sym_name = "grid", mesh = #sdy.mesh<["a"=2, "b"=2]>}> : () -> ()
// CHECK:      func.func public @main(%g: tensor<4x6xf32>) -> tensor<2x6xf32> {
// CHECK:        ^bb0(%l: tensor<2x3xf32>):
// CHECK-NEXT:     %m = tensor_coll.call @main_coll0(%l) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:     "sdy.return"(%m) : (tensor<2x3xf32>) -> ()
// CHECK:      func.func private @main_coll0(%l: memref<6xf32>, %result0: memref<6xf32>) attributes {purlin.inputs = 1 : i64, purlin.results = 1 : i64} {
// CHECK-NEXT:   coll.all_reduce avg %l, %result0 world 4 groups [{{\[}}0, 2], [1, 3]] : memref<6xf32>, memref<6xf32>
// CHECK-NOT:  stablehlo.constant

// -----

// GSPMD: @main calls the per-device function; the callee keeps its signature
// (its caller stays valid), its run of collectives becomes one call. Views
// around the gather (a reshape, a unit broadcast) share its buffers; the
// view after it is made again from the call's result.
module @gspmd attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%g: tensor<4x3xf32>) -> tensor<4x4x3xf32> {
    %0 = stablehlo.custom_call @Sharding(%g) {mhlo.sharding = "{devices=[4,1]<=[4]}"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<4x3xf32>) -> tensor<1x3xf32>
    %2 = call @body(%1) : (tensor<1x3xf32>) -> tensor<1x4x3xf32>
    %3 = stablehlo.custom_call @Sharding(%2) {mhlo.sharding = "{manual}"} : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {mhlo.sharding = "{devices=[4,1,1]<=[4]}"} : (tensor<1x4x3xf32>) -> tensor<4x4x3xf32>
    return %4 : tensor<4x4x3xf32>
  }
  func.func private @body(%x: tensor<1x3xf32>) -> tensor<1x4x3xf32> {
    %r = stablehlo.reshape %x : (tensor<1x3xf32>) -> tensor<3xf32>
    %b = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %a = "stablehlo.all_gather"(%b) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}> : (tensor<1x3xf32>) -> tensor<4x3xf32>
    %c = stablehlo.broadcast_in_dim %a, dims = [1, 2] : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    return %c : tensor<1x4x3xf32>
  }
}
// CHECK-LABEL: builtin.module @gspmd
// CHECK:      %2 = func.call @body(%1) : (tensor<1x3xf32>) -> tensor<1x4x3xf32>
// CHECK:      func.func private @body(%x: tensor<1x3xf32>) -> tensor<1x4x3xf32> {
// CHECK-NEXT:   %0 = tensor_coll.call @body_coll0(%x) : (tensor<1x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:   %c = "stablehlo.reshape"(%0) : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT:   func.return %c : tensor<1x4x3xf32>
// CHECK:      func.func private @body_coll0(%x: memref<3xf32>, %result0: memref<12xf32>)
// CHECK-NEXT:   coll.all_gather %x, %result0 world 4 : memref<3xf32>, memref<12xf32>

// -----

// What moves data but is not a collective stays, where it is: a multiply of
// an argument (before the call), a subtract of the first run's result (which
// ends the run: two calls). A divide that is not by the group size keeps the
// sum. partition_id stays.
module @mixed attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %t = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %y = stablehlo.multiply %x, %x : tensor<4xf32>
    %three = stablehlo.constant dense<3.0> : tensor<4xf32>
    %d = stablehlo.divide %s, %three : tensor<4xf32>
    %m = "stablehlo.all_reduce"(%y) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, use_global_device_ids}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %t = stablehlo.maximum %p, %q : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %e = stablehlo.subtract %d, %m : tensor<4xf32>
    %f = "stablehlo.collective_permute"(%e) <{source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>}> : (tensor<4xf32>) -> tensor<4xf32>
    return %f : tensor<4xf32>
  }
}
// CHECK-LABEL: builtin.module @mixed
// CHECK:      %s = tensor_coll.call @main_coll0(%x) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %y = stablehlo.multiply %x, %x : tensor<4xf32>
// CHECK-NEXT: %three = stablehlo.constant dense<3.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %d = stablehlo.divide %s, %three : tensor<4xf32>
// CHECK-NEXT: %m = tensor_coll.call @main_coll1(%y) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %e = stablehlo.subtract %d, %m : tensor<4xf32>
// CHECK-NEXT: %f = tensor_coll.call @main_coll2(%e) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:      func.func private @main_coll0
// CHECK-NEXT:   coll.all_reduce sum %x, %result0 world 2
// CHECK:      func.func private @main_coll1
// CHECK-NEXT:   coll.all_reduce max %y, %result0 world 2
// CHECK:      func.func private @main_coll2
// CHECK-NEXT:   coll.collective %e, %result0 in #coll.layout<named, world 2, [(0, 0, 4, 0), (1, 0, 4, 1)]> out #coll.layout<named, world 2, [(1, 0, 4, 0), (0, 0, 4, 1)]>

// -----

// A function nothing refers to, all collectives and views, becomes the coll
// function itself; a sharding constraint in the region is the combiner's result.
module @whole attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @m = <["a"=2]>
  func.func public @f(%x: tensor<2x3xbf16>) -> tensor<6xbf16> {
    %s = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids}> ({
    ^bb0(%p: tensor<bf16>, %q: tensor<bf16>):
      %t = stablehlo.minimum %p, %q : tensor<bf16>
      %u = sdy.sharding_constraint %t <@m, []> : tensor<bf16>
      stablehlo.return %u : tensor<bf16>
    }) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
    %r = stablehlo.reshape %s : (tensor<2x3xbf16>) -> tensor<6xbf16>
    return %r : tensor<6xbf16>
  }
}
// CHECK-LABEL: builtin.module @whole
// CHECK:      func.func @f(%x: memref<6xbf16>, %result0: memref<6xbf16>) attributes {purlin.inputs = 1 : i64, purlin.results = 1 : i64} {
// CHECK-NEXT:   coll.all_reduce min %x, %result0 world 2 : memref<6xbf16>, memref<6xbf16>
// CHECK-NEXT:   func.return

// -----

// has_dynamic_root: each process gathers its group's operands, then selects
// the root's, read from the last operand.
module @dynamic_root attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @f(%x: tensor<3xi32>, %root: tensor<1xi32>) -> tensor<3xi32> {
    %r = "stablehlo.collective_broadcast"(%x, %root) {replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>, has_dynamic_root} : (tensor<3xi32>, tensor<1xi32>) -> tensor<3xi32>
    return %r : tensor<3xi32>
  }
}
// CHECK-LABEL: builtin.module @dynamic_root
// CHECK:      %0 = tensor_coll.call @f_coll0(%x) : (tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT: %1 = "stablehlo.slice"(%root) <{start_indices = array<i64: 0>, limit_indices = array<i64: 1>, strides = array<i64: 1>}> : (tensor<1xi32>) -> tensor<1xi32>
// CHECK-NEXT: %2 = "stablehlo.reshape"(%1) : (tensor<1xi32>) -> tensor<i32>
// CHECK-NEXT: %3 = stablehlo.constant dense<0> : tensor<i32>
// CHECK-NEXT: %4 = "stablehlo.dynamic_slice"(%0, %2, %3) <{slice_sizes = array<i64: 1, 3>}> : (tensor<2x3xi32>, tensor<i32>, tensor<i32>) -> tensor<1x3xi32>
// CHECK-NEXT: %r = "stablehlo.reshape"(%4) : (tensor<1x3xi32>) -> tensor<3xi32>
// CHECK-NEXT: func.return %r : tensor<3xi32>
// CHECK:      func.func private @f_coll0(%operand: memref<3xi32>, %gathered: memref<6xi32>)
// CHECK-NEXT:   coll.all_gather %operand, %gathered world 2 groups [{{\[}}1, 0]] : memref<3xi32>, memref<6xi32>

// -----

// Collectives in the regions of a while and of a case (fori_loop, lax.cond):
// each region's run becomes a coll function called where it was, inside the region.
module @regions attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<4xf32>, %k: tensor<i32>) -> tensor<4xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %w:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %p = "stablehlo.collective_permute"(%v) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<4xf32>) -> tensor<4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %p : tensor<i32>, tensor<4xf32>
    }
    %r = "stablehlo.case"(%k) ({
      stablehlo.return %w#1 : tensor<4xf32>
    }, {
      %s = "stablehlo.all_reduce"(%w#1) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %t = stablehlo.maximum %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
      }) : (tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %s : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
// CHECK-LABEL: builtin.module @regions
// CHECK:        "stablehlo.while"
// CHECK:        stablehlo.return %lt : tensor<i1>
// CHECK:        %p = tensor_coll.call @main_coll0(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %one = stablehlo.constant dense<1> : tensor<i32>
// CHECK:        stablehlo.return %j, %p : tensor<i32>, tensor<4xf32>
// CHECK:        "stablehlo.case"
// CHECK:        %s = tensor_coll.call @main_coll1(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   stablehlo.return %s : tensor<4xf32>
// CHECK:      func.func private @main_coll0
// CHECK-NEXT:   coll.collective
// CHECK:      func.func private @main_coll1
// CHECK-NEXT:   coll.all_reduce max
