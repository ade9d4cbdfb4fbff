// RUN: purlin-opt %s --split-input-file --verify-diagnostics -p 'snac-verify{exhaustive=true}' | filecheck %s
// RUN: purlin-opt %s --split-input-file --verify-diagnostics -p snac-verify | filecheck %s --check-prefix=RULES
// Hand-written SNAC programs that break the protocol; snac-verify names the ranks,
// buffer and epoch involved, by the interleaving search (CHECK) and by its per-rank
// obligations (RULES; in-place programs go through the search there too). The base is a 3-rank all_gather with one staging slot.

// Missing notify: the producer stages but never announces its units.
// CHECK: snac-verify-negative.mlir:{{[0-9]+}}:5: error: 'snac.program': snac-verify: missing notify: rank 0 (consumer) waits for exchange_ready[1] on rank 0 >= 1 (epoch 0), but no op of the program stores to exchange_ready
// RULES: snac-verify-negative.mlir:{{[0-9]+}}:5: error: 'snac.program': snac-verify: missing notify: rank 0 (consumer) waits for exchange_ready[1] on rank 0 >= 1, but no step of any rank stores to exchange_ready[1] on rank 0
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 16 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
        }
      }
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// Read before wait: every group is consumed with the token of the wait for group 0.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: rank {{[0-9]}} consumes group 1 of phase 'exchange' with the token of a wait for group 0 of phase 'exchange'
// RULES: error: 'snac.consume': snac-verify: rank 0 consumes group 1 of phase 'exchange' with the token of a wait for group 0 of phase 'exchange'
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 16 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        %15 = snac.wait @exchange group %4 of %0 epoch %1 acquire system
        scf.for %14 = %4 to %13 step %5 {
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// Read before wait: a relaxed wait does not order the staged data before the read.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (consumer) reads @exchange_buf of rank {{[0-9]}} half 0 slot 0 (unit {{[0-9]}}, epoch 0) without synchronising with its producer
// RULES: error: 'snac.wait': snac-verify: race: 'snac.wait' is a relaxed wait with no fence after it in its block, so it orders no later read
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 16 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 relaxed system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// Reused half: without reclaim, the single slot is rewritten while a peer still reads it.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: {{race: rank [0-9] \(producer\) overwrites @exchange_buf of rank [0-9] half 0 slot 0 with unit 1 of epoch 0 while rank [0-9] \(consumer\) at epoch 0 may still read it|reused too early: @exchange_buf of rank [0-9] half 0 slot 0 was overwritten with unit 1 of epoch 0 before rank [0-9] read unit 0 of epoch 0 from it}}
// RULES: error: 'snac.stage': snac-verify: reused too early: rank 0 (producer) overwrites @exchange_buf of rank 0 half 0 slot 0 with unit 1 of epoch 0 while rank 1 (consumer) may still read unit 0 of epoch 0 from it
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 16 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// Reused half: advancing by an even amount keeps every call on the same half.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: {{race: rank [0-9] \(producer\) overwrites @exchange_buf of rank [0-9] half 0 slot 0 with unit [0-9] of epoch [0-9] while rank [0-9] \(consumer\) at epoch [0-9] may still read it|reused too early: @exchange_buf of rank [0-9] half 0 slot 0 was overwritten with unit [0-9] of epoch [0-9] before rank [0-9] read unit [0-9] of epoch [0-9] from it}}
// RULES: error: 'snac.stage': snac-verify: reused too early: rank 0 (producer) overwrites @exchange_buf of rank 0 half 0 slot 0 with unit 0 of epoch 2 while rank 1 (consumer) may still read unit 1 of epoch 0 from it
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 16 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %6
    }
    func.return
  }
}


// -----

// Deadlock: one role consumes before it produces, so every rank waits for the others.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: deadlock: cycle of waits at epoch 0: rank {{[0-9]}} (consumer) waiting for exchange_ready[{{[0-9]}}] >= 1 (has 0) -> rank {{[0-9]}} (consumer) waiting for exchange_ready[{{[0-9]}}] >= 1 (has 0) -> back
// RULES: error: 'snac.program': snac-verify: deadlock: cycle of waits: rank 0 (consumer) waiting for exchange_ready[1] on rank 0 >= 1 (has 0)
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy : memref<8xf32>, memref<24xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 4 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role consumer blocks 16 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %3
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// Broadcast in one fused role without the wait_free / finish handshake: ranks 1
// and 2 send nothing back, so rank 0 rewrites a window half two calls later
// with nothing ordering the receivers' reads of it before.
// CHECK: snac-verify-negative.mlir:{{[0-9]+}}:11: error: 'snac.put': snac-verify: race: rank 0 (fused) overwrites @exchange_buf of rank {{[12]}} half 0 source 0 unit 0 with unit 0 of epoch 3 while rank {{[12]}} (fused) at epoch 1 may still read it (no acknowledgement orders the read before this write)
// RULES: snac-verify-negative.mlir:{{[0-9]+}}:11: error: 'snac.put': snac-verify: reused too early: rank 0 (fused) overwrites @exchange_buf of rank 1 half 0 source 0 unit 0 with unit 0 of epoch 3 while rank 1 (fused) may still read unit 0 of epoch 1 from it
builtin.module {
  func.func @broadcast(%in: memref<4xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 3 regime latency strategy copy : memref<4xf32>, memref<4xf32> {
      snac.buffer @exchange_buf packets halves 2 slots 3 elems 4 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <named, world 3, [(0, 0, 4, 7)]> to <named, world 3, [(0, 0, 4, 7), (1, 0, 4, 7), (2, 0, 4, 7)]> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %9 = arith.addi %1, %5 : index
      snac.role fused blocks 1 {
        %10 = snac.units @exchange of %0
        scf.for %11 = %4 to %10 step %5 {
          snac.put @exchange unit %11 of %0 half %3 flag %9 relaxed system
        }
        %12 = snac.groups @exchange of %0
        scf.for %13 = %4 to %12 step %5 {
          %14 = snac.wait @exchange group %13 of %0 epoch %1 acquire system
          snac.consume @exchange group %13 of %0 half %3 after %14
        }
      }
      snac.advance %7
    }
    func.return
  }
}


// -----

// all_gather_v of dynamic counts in one fused role without the handshake, but
// with no flag-only unit of an empty slice (no empty_units): with counts
// [0, 2, 4] rank 0 sends nothing, so ranks 1 and 2 rewrite its window half two
// calls later with nothing ordering its reads before.
// CHECK: snac-verify-negative.mlir:{{[0-9]+}}:11: error: 'snac.put': snac-verify (with counts [0, 2, 4]): race: rank {{[12]}} (fused) overwrites @exchange_buf of rank 0 half 0 source {{[12]}} unit 0 with unit 0 of epoch 3 while rank 0 (fused) at epoch 1 may still read it (no acknowledgement orders the read before this write)
// RULES: snac-verify-negative.mlir:{{[0-9]+}}:11: error: 'snac.put': snac-verify (with counts [0, 2, 4]): reused too early: rank 1 (fused) overwrites @exchange_buf of rank 0 half 0 source 1 unit 0 with unit 0 of epoch 3 while rank 0 (fused) may still read unit 0 of epoch 1 from it (no acknowledgement orders the read before this write)
builtin.module {
  func.func @all_gather_v(%in: memref<8xf32>, %out: memref<24xf32>, %counts: memref<3xi64>) {
    snac.program %in, %out counts %counts world 3 regime latency strategy copy : memref<8xf32>, memref<24xf32>, memref<3xi64> {
      snac.buffer @exchange_buf packets halves 2 slots 3 elems 30 : f32
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed_v, world 3, ?> to <scattered_v, world 3, ?> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %5 : index
      snac.role fused blocks 1 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.put @exchange unit %10 of %0 half %3 flag %8 relaxed system
        }
        %11 = snac.groups @exchange of %0
        scf.for %12 = %4 to %11 step %5 {
          %13 = snac.wait @exchange group %12 of %0 epoch %1 acquire system
          snac.consume @exchange group %12 of %0 half %3 after %13
        }
      }
      snac.advance %7
    }
    func.return
  }
}

// -----

// Direct push without reclaim: a producer writes a peer's output before that peer's call began (its grant orders nothing).
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) before rank {{[0-9]}}'s call may have begun
// RULES: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) before rank {{[0-9]}}'s call may have begun
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy symmetric : memref<8xf32>, memref<24xf32> {
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 0 direct push ready @exchange_ready free @exchange_free stage_local
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %9 = arith.addi %1, %5 : index
      snac.role producer blocks 64 {
        %10 = snac.units @exchange of %0
        scf.for %11 = %4 to %10 step %5 {
          snac.push @exchange unit %11 of %0
          %12 = arith.addi %11, %5 : index
          %13 = arith.addi %1, %12 : index
          snac.notify @exchange unit %11 of %0 value %13 release system
        }
      }
      snac.role consumer blocks 1 {
        snac.grant @exchange of %0 value %9 release system
        %14 = snac.groups @exchange of %0
        scf.for %15 = %4 to %14 step %5 {
          %16 = snac.wait @exchange group %15 of %0 epoch %1 acquire system
        }
      }
      snac.advance %7
    }
    func.return
  }
}

// -----

// Direct push without waits: the consumer's call returns while producers may still write its output.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
// RULES: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy symmetric : memref<8xf32>, memref<24xf32> {
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 0 direct push ready @exchange_ready free @exchange_free stage_local
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %9 = arith.addi %1, %5 : index
      snac.role producer blocks 64 {
        %10 = snac.units @exchange of %0
        scf.for %11 = %4 to %10 step %5 {
          snac.reclaim @exchange unit %11 of %0 epoch %1 prev %2 acquire system
          snac.push @exchange unit %11 of %0
          %12 = arith.addi %11, %5 : index
          %13 = arith.addi %1, %12 : index
          snac.notify @exchange unit %11 of %0 value %13 release system
        }
      }
      snac.role consumer blocks 1 {
        snac.grant @exchange of %0 value %9 release system
        %14 = snac.groups @exchange of %0
        scf.for %15 = %4 to %14 step %5 {
        }
      }
      snac.advance %7
    }
    func.return
  }
}

// -----

// Direct push, relaxed notify: the consumer's wait does not order the producers' writes before its return.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
// RULES: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (producer) writes rank {{[0-9]}}'s output [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
builtin.module {
  func.func @all_gather(%in: memref<8xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy copy symmetric : memref<8xf32>, memref<24xf32> {
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <packed, world 3, 8> to <scattered, world 3, 8> consume <copy> chunk 0 direct push ready @exchange_ready free @exchange_free stage_local
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %9 = arith.addi %1, %5 : index
      snac.role producer blocks 64 {
        %10 = snac.units @exchange of %0
        scf.for %11 = %4 to %10 step %5 {
          snac.reclaim @exchange unit %11 of %0 epoch %1 prev %2 acquire system
          snac.push @exchange unit %11 of %0
          %12 = arith.addi %11, %5 : index
          %13 = arith.addi %1, %12 : index
          snac.notify @exchange unit %11 of %0 value %13 relaxed system
        }
      }
      snac.role consumer blocks 1 {
        snac.grant @exchange of %0 value %9 release system
        %14 = snac.groups @exchange of %0
        scf.for %15 = %4 to %14 step %5 {
          %16 = snac.wait @exchange group %15 of %0 epoch %1 acquire system
        }
      }
      snac.advance %7
    }
    func.return
  }
}

// -----

// Direct pull without drain: a producer's call returns while its peers still read its input.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (consumer) reads rank {{[0-9]}}'s input [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
// RULES: error: '{{snac\.[a-z_]+}}': snac-verify: race: rank {{[0-9]}} (consumer) reads rank {{[0-9]}}'s input [{{[0-9]+}}, {{[0-9]+}}) after rank {{[0-9]}}'s call may have returned
builtin.module {
  func.func @all_reduce(%in: memref<24xf32>, %out: memref<24xf32>) {
    snac.program %in, %out world 3 regime throughput strategy direct symmetric : memref<24xf32>, memref<24xf32> {
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <named, world 3, [(0, 0, 24, 0), (1, 0, 24, 0), (2, 0, 24, 0)]> to <named, world 3, [(0, 0, 24, 0), (1, 0, 24, 0), (2, 0, 24, 0)]> consume <reduce sum> chunk 0 direct pull ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 1 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 64 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}

// -----

// Direct pull in place: a one-shot reduction overwrites a rank's buffer while its peers still read it as input.
// CHECK: error: '{{snac\.[a-z_]+}}': snac-verify: in place: rank {{[0-9]}} (consumer) reads rank {{[0-9]}}'s input [{{[0-9]+}}, {{[0-9]+}}) as input, but rank {{[0-9]}} (consumer) already overwrote
// RULES: error: '{{snac\.[a-z_]+}}': snac-verify: in place: rank {{[0-9]}} (consumer) reads rank {{[0-9]}}'s input [{{[0-9]+}}, {{[0-9]+}}) as input, but rank {{[0-9]}} (consumer) already overwrote
builtin.module {
  func.func @all_reduce(%in: memref<24xf32>) {
    snac.program %in, %in world 3 regime throughput strategy direct symmetric : memref<24xf32>, memref<24xf32> {
      snac.signals @exchange_ready slots 3
      snac.signals @exchange_free slots 3
      snac.phase @exchange from input <named, world 3, [(0, 0, 24, 0), (1, 0, 24, 0), (2, 0, 24, 0)]> to <named, world 3, [(0, 0, 24, 0), (1, 0, 24, 0), (2, 0, 24, 0)]> consume <reduce sum> chunk 0 direct pull ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      snac.role producer blocks 1 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
        snac.drain @exchange of %0 value %8 acquire system
      }
      snac.role consumer blocks 64 {
        %13 = snac.groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.advance %7
    }
    func.return
  }
}
