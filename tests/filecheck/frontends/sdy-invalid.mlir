// RUN: purlin-opt %s --split-input-file --verify-diagnostics

// One case per verifier rule of the sdy dialect, each with its exact message.

// expected-error@+1 {{'sdy.mesh': axis names x, x repeat a name}}
sdy.mesh @mesh = <["x"=2, "x"=4]>

// -----

// expected-error@+1 {{'sdy.mesh': axis sizes must be positive}}
sdy.mesh @mesh = <["x"=0]>

// -----

// expected-error@+1 {{'sdy.mesh': device_ids must be 0 to 3, each once, for 4 devices}}
sdy.mesh @mesh = <["x"=4], device_ids=[0, 1, 1, 3]>

// -----

sdy.mesh @mesh = <["x"=2]>
func.func @operands(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'sdy.manual_computation': 1 operands need as many in_shardings and body arguments, got 2 and 1}}
  %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>, <@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<2xf32>) {
    sdy.return %l : tensor<2xf32>
  } : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @mesh = <["x"=2]>
func.func @results(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'sdy.manual_computation': 1 results need as many out_shardings, got 0}}
  %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[] manual_axes={"x"} (%l: tensor<2xf32>) {
    sdy.return %l : tensor<2xf32>
  } : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @mesh = <["x"=2]>
func.func @body_return(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'sdy.manual_computation': the body must end in sdy.return of 1 values}}
  %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%l: tensor<2xf32>) {
    sdy.return
  } : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

sdy.mesh @mesh = <["x"=2]>
func.func @constraint(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'sdy.sharding_constraint': the result type tensor<2xf32> must be the operand's tensor<4xf32>}}
  %0 = "sdy.sharding_constraint"(%x) <{sharding = #sdy.sharding<@mesh, [{"x"}]>}> : (tensor<4xf32>) -> tensor<2xf32>
  return %x : tensor<4xf32>
}
