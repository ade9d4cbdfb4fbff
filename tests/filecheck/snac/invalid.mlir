// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FAILS

// Every case must fail: none prints its module.
// FAILS-NOT: builtin.module

// One case per verifier rule of the snac dialect, each with its exact message.

// -- snac.program -------------------------------------------------------------

func.func @world_zero(%a: memref<8xf32>) {
  snac.program %a, %a world 0 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': world size must be at least 1, got 0
    %r = snac.rank
  }
  func.return
}

// -----

func.func @world_too_large(%a: memref<8xf32>) {
  snac.program %a, %a world 577 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': world size 577 is more than the 576 ranks purlin handles (the largest NVLink domain it compiles, verifies and runs for)
    %r = snac.rank
  }
  func.return
}

// -----

func.func @world_negative(%a: memref<8xf32>) {
  snac.program %a, %a world -4 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': world size must be at least 1, got -4
    %r = snac.rank
  }
  func.return
}

// -----

func.func @unsupported_element_type(%a: memref<8xi16>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xi16>, memref<8xi16> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': element type i16 is not supported, expected one of bf16, f16, f32, f8E4M3FN, f8E5M2, i8, ui8, i32, ui32, i64, ui64, f64
    %r = snac.rank
  }
  func.return
}

// -----

func.func @boolean_element_type(%a: memref<8xi1>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xi1>, memref<8xi1> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': element type i1 is not supported, expected one of bf16, f16, f32, f8E4M3FN, f8E5M2, i8, ui8, i32, ui32, i64, ui64, f64
    %r = snac.rank
  }
  func.return
}

// -----

func.func @element_types_differ(%a: memref<8xf32>, %b: memref<8xbf16>) {
  snac.program %a, %b world 2 regime throughput strategy copy : memref<8xf32>, memref<8xbf16> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.program': input and output element types differ (f32 vs bf16)
    %r = snac.rank
  }
  func.return
}

// -----

// The phase's layouts, both of them, are for the program's world.
func.func @phase_for_another_world(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 4, 2> to <scattered, world 4, 2> consume <copy> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': phase layouts are for world 4 but the program for world 2
  }
  func.return
}

// -----

func.func @phase_destination_for_another_world(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 1, 8> consume <copy> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': phase layouts are for world 1 but the program for world 2
  }
  func.return
}

// -- snac.buffer --------------------------------------------------------------

// -----

func.func @buffer_one_half(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 1 slots 1 elems 4 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': buffers are double-buffered (halves 2), got halves 1
  }
  func.return
}

// -----

func.func @buffer_three_halves(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b packets halves 3 slots 2 elems 4 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': buffers are double-buffered (halves 2), got halves 3
  }
  func.return
}

// -----

func.func @buffer_no_slots(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 0 elems 4 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': needs at least one slot and non-negative elems, got slots 0, elems 4
  }
  func.return
}

// -----

func.func @buffer_negative_elems(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems -8 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': needs at least one slot and non-negative elems, got slots 1, elems -8
  }
  func.return
}

// -- snac.phase ---------------------------------------------------------------

// -----

func.func @phase_outside_program(%a: memref<8xf32>) {
  snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.phase': must be directly inside a snac.program
  func.return
}

// -----

func.func @phase_inside_role(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.role producer blocks 1 {
      snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'snac.phase': must be directly inside a snac.program
    }
  }
  func.return
}

// -----

func.func @phase_missing_buffer(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @nope ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': '@nope' does not name a snac.buffer in the enclosing snac.program
  }
  func.return
}

// -----

func.func @phase_buffer_is_signals(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @s ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': '@s' does not name a snac.buffer in the enclosing snac.program
  }
  func.return
}

// -----

func.func @phase_ready_is_buffer(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @b free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': '@b' does not name a snac.signals in the enclosing snac.program
  }
  func.return
}

// -----

func.func @phase_missing_free(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @gone
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': '@gone' does not name a snac.signals in the enclosing snac.program
  }
  func.return
}

// -----

func.func @signals_not_one_per_rank(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.signals @f slots 3
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @f
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': signals '@f' have 3 slots, expected one per rank (2)
  }
  func.return
}

// -----

func.func @negative_chunk(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk -1 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': chunk must be non-negative, got -1
  }
  func.return
}

// -----

func.func @buffer_element_type_differs(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : bf16
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': buffer '@b' holds bf16 but the program moves f32
  }
  func.return
}

// -----

func.func @prod_on_fp8(%a: memref<8xf8E4M3FN>) {
  snac.program %a, %a world 2 regime throughput strategy direct : memref<8xf8E4M3FN>, memref<8xf8E4M3FN> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f8E4M3FN
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce prod> chunk 4 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': reduction 'prod' is not supported for fp8e4m3 (it saturates); use f16, bf16 or f32
  }
  func.return
}

// -----

func.func @empty_units_staged(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s empty_units
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': 'empty_units' makes an empty slice one flag-only packet, but phase 'p' moves data by 'staging'; expected a phase via a packet window
  }
  func.return
}

// -----

func.func @coalesce_static(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime latency strategy direct : memref<8xf32>, memref<8xf32> {
    snac.buffer @b packets halves 2 slots 2 elems 16 : f32
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 0 via @b ready @s free @s coalesce
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': 'coalesce' merges the names of dynamic layouts once bound, but phase 'p' has static layouts; expected one dynamic scattered layout from and to
  }
  func.return
}

// -----

func.func @coalesce_packed(%a: memref<8xf32>, %b: memref<16xf32>, %n: memref<2xi64>) {
  snac.program %a, %b counts %n world 2 regime latency strategy direct : memref<8xf32>, memref<16xf32>, memref<2xi64> {
    snac.buffer @w packets halves 2 slots 2 elems 32 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed_v, world 2, ?> to <scattered_v, world 2, ?> consume <copy> chunk 0 via @w ready @s free @s coalesce
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': 'coalesce' merges the names of dynamic layouts once bound, but phase 'p' moves packed to scattered slices; expected one dynamic scattered layout from and to
  }
  func.return
}

// -- queries and roles --------------------------------------------------------

// -----

func.func @units_of_missing_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    %r = snac.rank
    %n = snac.units @nope of %r
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.units': '@nope' does not name a snac.phase in the enclosing snac.program
  }
  func.return
}

// -----

func.func @groups_of_a_buffer(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    %r = snac.rank
    %n = snac.groups @b of %r
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.groups': '@b' does not name a snac.phase in the enclosing snac.program
  }
  func.return
}

// -----

func.func @max_units_outside_program(%a: memref<8xf32>) {
  %n = snac.max_units @p
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.max_units': must be inside a snac.program
  func.return
}

// -----

func.func @role_without_blocks(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.role consumer blocks 0 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a role needs at least one block, got 0
      %r = snac.rank
    }
  }
  func.return
}

// -----

func.func @role_outside_program(%a: memref<8xf32>) {
  snac.role producer blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.role': must be directly inside a snac.program
    %r = snac.rank
  }
  func.return
}

// -----

func.func @role_inside_role(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.role producer blocks 1 {
      snac.role reducer blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'snac.role': must be directly inside a snac.program
        %r = snac.rank
      }
    }
  }
  func.return
}

// -----

func.func @fused_role_stages(%in: memref<8xf32>, %out: memref<16xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy : memref<8xf32>, memref<16xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 8 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 8> to <scattered, world 2, 8> consume <copy> chunk 8 via @b ready @ready free @free
    %r = snac.rank
    %e, %v = snac.epoch
    %h = snac.half %e
    %c0 = arith.constant 0 : index
    snac.role fused blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a fused role moves packets only (put, wait, consume), but holds 'snac.stage'; staged phases need separate producer and consumer roles
      snac.stage @p unit %c0 of %r half %h
    }
  }
  func.return
}

// -----

func.func @advance_inside_role(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    %c1 = arith.constant 1 : index
    snac.role producer blocks 1 {
      snac.advance %c1
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'snac.advance': must be directly inside a snac.program, after its roles
    }
  }
  func.return
}

// -----

func.func @advance_outside_program(%a: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  snac.advance %c1
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'snac.advance': must be directly inside a snac.program, after its roles
  func.return
}

// -- memory orders: each signal op admits only the orders its protocol step needs

// -----

func.func @reclaim_release(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.reclaim @p unit %r of %r epoch %e prev %prev release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.reclaim': memory order 'release' is not valid here, expected acquire or relaxed
  }
  func.return
}

// -----

func.func @put_acquire(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b packets halves 2 slots 2 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    %h = snac.half %e
    snac.put @p unit %r of %r half %h flag %e acquire gpu
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.put': memory order 'acquire' is not valid here, expected relaxed or release
  }
  func.return
}

// -----

func.func @notify_acquire(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.notify @p unit %r of %r value %e acquire system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.notify': memory order 'acquire' is not valid here, expected release or relaxed
  }
  func.return
}

// -----

func.func @wait_release(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    %t = snac.wait @p group %r of %r epoch %e release gpu
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.wait': memory order 'release' is not valid here, expected acquire or relaxed
  }
  func.return
}

// -----

func.func @ack_acquire(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.ack @p group %r of %r epoch %e acquire system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.ack': memory order 'acquire' is not valid here, expected release or relaxed
  }
  func.return
}

// -----

func.func @finish_acquire(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.finish @p of %r value %e acquire system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.finish': memory order 'acquire' is not valid here, expected release or relaxed
  }
  func.return
}

// -- protocol steps name a phase, and use its buffer the way its regime does --

// -----

func.func @notify_missing_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.notify @nope unit %r of %r value %e release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.notify': '@nope' does not name a snac.phase in the enclosing snac.program
  }
  func.return
}

// -----

func.func @consume_missing_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    %h = snac.half %e
    %t = snac.wait @p group %r of %r epoch %e acquire system
    snac.consume @q group %r of %r half %h after %t
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.consume': '@q' does not name a snac.phase in the enclosing snac.program
  }
  func.return
}

// -----

func.func @stage_on_packets(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b packets halves 2 slots 2 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    %h = snac.half %e
    snac.stage @p unit %r of %r half %h
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.stage': phase '@p' moves through a packet window, expected a phase that moves through a staging buffer
  }
  func.return
}

// -----

func.func @put_on_staging(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    %h = snac.half %e
    snac.put @p unit %r of %r half %h flag %e relaxed system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.put': phase '@p' moves through a staging buffer, expected a phase that moves through a packet window
  }
  func.return
}

// -- direct (in place) phases of symmetric programs ----------------------------

// -----

func.func @phase_without_a_way_to_move(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': a phase moves either through a buffer (via @buf) or in place (direct pull or direct push), expected exactly one of them
  }
  func.return
}

// -----

func.func @phase_with_two_ways_to_move(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @b direct push ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': a phase moves either through a buffer (via @buf) or in place (direct pull or direct push), expected exactly one of them
  }
  func.return
}

// -----

func.func @direct_phase_of_a_program_not_symmetric(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': 'direct push' reads or writes the peers' own buffers, but the program is not symmetric; mark it symmetric or move the phase through a buffer
  }
  func.return
}

// -----

func.func @pushed_reduction(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy direct symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <packed, world 2, 4> consume <reduce sum> chunk 0 direct push ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': 'direct push' writes each unit into its destinations, which cannot reduce; a reduction is 'direct pull'
  }
  func.return
}

// -----

func.func @push_in_a_pulled_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy direct symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <packed, world 2, 4> consume <reduce sum> chunk 0 direct pull ready @s free @s
    %r = snac.rank
    snac.push @p unit %r of %r
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.push': phase '@p' moves by direct pull, expected a phase that moves by direct push
  }
  func.return
}

// -----

func.func @grant_in_a_staged_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.grant @p of %r value %e release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.grant': phase '@p' moves through a staging buffer, expected a phase that moves by direct push
  }
  func.return
}

// -----

func.func @drain_in_a_pushed_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.drain @p of %r value %e acquire system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.drain': phase '@p' moves by direct push, expected a phase that moves by direct pull
  }
  func.return
}

// -----

func.func @reclaim_in_a_pulled_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy direct symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <packed, world 2, 4> consume <reduce sum> chunk 0 direct pull ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.reclaim @p unit %r of %r epoch %e prev %prev acquire system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.reclaim': phase '@p' moves by direct pull, expected a phase that moves through a staging buffer or through a packet window or by direct push
  }
  func.return
}

// -----

func.func @finish_in_a_pushed_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.finish @p of %r value %e release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.finish': phase '@p' moves by direct push, expected a phase that moves through a staging buffer or through a packet window or by direct pull
  }
  func.return
}

// -----

func.func @ack_in_a_pulled_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy direct symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 4> to <packed, world 2, 4> consume <reduce sum> chunk 0 direct pull ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.ack @p group %r of %r epoch %e release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.ack': phase '@p' moves by direct pull, expected a phase that moves through a staging buffer
  }
  func.return
}

// -----

func.func @notify_in_a_packet_phase(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime latency strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b packets halves 2 slots 2 elems 4 : f32
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @b ready @s free @s
    %r = snac.rank
    %e, %prev = snac.epoch
    snac.notify @p unit %r of %r value %e release system
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.notify': phase '@p' moves through a packet window, expected a phase that moves through a staging buffer or by direct pull or by direct push
  }
  func.return
}

// -----

func.func @push_in_a_fused_role(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @s slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @s free @s
    %r = snac.rank
    snac.role fused blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a fused role moves packets only (put, wait, consume), but holds 'snac.push'; staged phases need separate producer and consumer roles
      snac.push @p unit %r of %r
    }
  }
  func.return
}

// -- sizes and limits, checked before anything is expanded ---------------------

// -----

func.func @layouts_that_do_not_make_a_phase(%a: memref<8xf32>, %b: memref<24xf32>) {
  snac.program %a, %b world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 8 : f32
    snac.signals @s slots 3
    snac.phase @p from input <packed, world 3, 0> to <scattered, world 3, 8> consume <copy> chunk 8 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': the layouts do not make a phase: slice 0 has 0 elements in the input but 8 in the output
  }
  func.return
}

// -----

func.func @source_layout_past_its_buffer(%a: memref<256xf32>, %b: memref<1024xf32>) {
  snac.program %a, %b world 4 regime throughput strategy copy : memref<256xf32>, memref<1024xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 256 : f32
    snac.signals @s slots 4
    snac.phase @p from input <packed, world 4, 2147483648> to <scattered, world 4, 2147483648> consume <copy> chunk 256 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': the source layout reaches element 2147483648 of a rank's input, which holds 256 (memref<256xf32>)
  }
  func.return
}

// -----

func.func @destination_layout_past_its_buffer(%a: memref<256xf32>, %b: memref<1000xf32>) {
  snac.program %a, %b world 4 regime throughput strategy copy : memref<256xf32>, memref<1000xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 256 : f32
    snac.signals @s slots 4
    snac.phase @p from input <packed, world 4, 256> to <scattered, world 4, 256> consume <copy> chunk 256 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': the destination layout reaches element 1024 of a rank's output, which holds 1000 (memref<1000xf32>)
  }
  func.return
}

// -----

func.func @chunks_too_small_for_the_layout(%a: memref<4194304xf32>, %b: memref<4194304xf32>) {
  snac.program %a, %b world 2 regime throughput strategy direct : memref<4194304xf32>, memref<4194304xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 1 : f32
    snac.signals @s slots 2
    snac.phase @p from input <scattered, world 2, 2097152> to <scattered, world 2, 2097152> consume <reduce sum> chunk 1 via @b ready @s free @s
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.phase': chunk 1 cuts the layout into 8388608 units, more than the 1048576 a phase may have; use larger chunks
  }
  func.return
}

// -----

func.func @too_many_slots(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1000000000 elems 4 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': 1000000000 slots per half are more than the 1024 a buffer may have
  }
  func.return
}

// -----

func.func @buffer_too_large(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 4 elems 1073741824 : f32
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.buffer': 2 halves of 4 slots of 1073741824 elements are 34359738368 bytes, more than the 17179869184 a buffer may have
  }
  func.return
}

// -----

func.func @too_many_blocks(%a: memref<8xf32>) {
  snac.program %a, %a world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.role producer blocks 100000 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': 100000 blocks are more than the 4096 a role may have
      %r = snac.rank
    }
  }
  func.return
}

// -----

func.func @stream_role_of_two_blocks(%in: memref<8xf32>, %out: memref<16xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<16xf32> {
    snac.role stream blocks 2 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a stream role runs on one block (its signals between the copies), got 2
      %r = snac.rank
    }
  }
  func.return
}

// -----

func.func @stream_role_beside_another(%in: memref<8xf32>, %out: memref<16xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy symmetric : memref<8xf32>, memref<16xf32> {
    snac.role stream blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a stream role must be its program's only role, the program has 2
      %r = snac.rank
    }
    snac.role consumer blocks 1 {
      %r = snac.rank
    }
  }
  func.return
}

// -----

func.func @stream_role_stages(%in: memref<8xf32>, %out: memref<16xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy : memref<8xf32>, memref<16xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 8 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 8> to <scattered, world 2, 8> consume <copy> chunk 8 via @b ready @ready free @free
    %r = snac.rank
    %e, %v = snac.epoch
    %h = snac.half %e
    %c0 = arith.constant 0 : index
    snac.role stream blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a stream role pushes, signals and waits only, but holds 'snac.stage'
      snac.stage @p unit %c0 of %r half %h
    }
  }
  func.return
}

// -----

func.func @stream_role_of_a_staged_phase(%in: memref<8xf32>, %out: memref<16xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy : memref<8xf32>, memref<16xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 8 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 8> to <scattered, world 2, 8> consume <copy> chunk 8 via @b ready @ready free @free
    %r = snac.rank
    %e, %v = snac.epoch
    %c0 = arith.constant 0 : index
    snac.role stream blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'snac.role': a stream role moves pushed phases only; '@p' moves by staging
      %t = snac.wait @p group %c0 of %r epoch %e acquire system
    }
  }
  func.return
}
