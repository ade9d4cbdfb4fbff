// RUN: not purlin-opt %s --split-input-file -p 'convert-snac-to-atom' > %t.out 2> %t.err
// RUN: filecheck %s < %t.err
// RUN: filecheck %s --check-prefix=OK < %t.out

// The runtimes write the flag epoch + 1 into every packet and use the half of
// the epoch's parity, whatever a put or stage says: convert-snac-to-atom
// checks that the operands are those values. Hand-edited latency all_gathers
// on 2 ranks; only the first is as convert-coll-to-snac writes it.

// OK: atom.put @exchange unit %{{[0-9]+}} of %{{[0-9]+}} half %{{[0-9]+}} flag %{{[0-9]+}} relaxed system mech packet
builtin.module {
  func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 2 regime latency strategy copy : memref<2xf32>, memref<4xf32> {
      snac.buffer @exchange_buf packets halves 2 slots 2 elems 2 : f32
      snac.signals @exchange_ready slots 2
      snac.signals @exchange_free slots 2
      snac.phase @exchange from input <packed, world 2, 2> to <scattered, world 2, 2> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
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

// A flag of epoch + 2: the readers would wait for epoch + 1.
// CHECK: convert-snac-to-atom-convention.mlir:{{[0-9]+}}:11: error: 'snac.put': flag must be epoch + 1, which the runtimes write into every packet; got epoch + 2
builtin.module {
  func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 2 regime latency strategy copy : memref<2xf32>, memref<4xf32> {
      snac.buffer @exchange_buf packets halves 2 slots 2 elems 2 : f32
      snac.signals @exchange_ready slots 2
      snac.signals @exchange_free slots 2
      snac.phase @exchange from input <packed, world 2, 2> to <scattered, world 2, 2> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %c2 = arith.constant 2 : index
      %9 = arith.addi %c2, %1 : index
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

// A flag that is not relative to the epoch.
// CHECK: convert-snac-to-atom-convention.mlir:{{[0-9]+}}:11: error: 'snac.put': flag must be epoch + 1, which the runtimes write into every packet; got a result of 'arith.addi'
builtin.module {
  func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 2 regime latency strategy copy : memref<2xf32>, memref<4xf32> {
      snac.buffer @exchange_buf packets halves 2 slots 2 elems 2 : f32
      snac.signals @exchange_ready slots 2
      snac.signals @exchange_free slots 2
      snac.phase @exchange from input <packed, world 2, 2> to <scattered, world 2, 2> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %9 = arith.addi %6, %5 : index
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

// The half of the previous epoch, whose parity may differ.
// CHECK: convert-snac-to-atom-convention.mlir:{{[0-9]+}}:11: error: 'snac.put': half must be the current epoch's parity (snac.half of the epoch), which the runtimes use; got snac.half of the previous epoch
builtin.module {
  func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 2 regime latency strategy copy : memref<2xf32>, memref<4xf32> {
      snac.buffer @exchange_buf packets halves 2 slots 2 elems 2 : f32
      snac.signals @exchange_ready slots 2
      snac.signals @exchange_free slots 2
      snac.phase @exchange from input <packed, world 2, 2> to <scattered, world 2, 2> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %2
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

// A stage into half 0 on every call: the runtimes alternate the halves.
// CHECK: convert-snac-to-atom-convention.mlir:{{[0-9]+}}:11: error: 'snac.stage': half must be the current epoch's parity (snac.half of the epoch), which the runtimes use; got the constant 0
builtin.module {
  func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
    snac.program %in, %out world 2 regime throughput strategy copy : memref<2xf32>, memref<4xf32> {
      snac.buffer @exchange_buf staging halves 2 slots 4 elems 2 : f32
      snac.signals @exchange_ready slots 2
      snac.signals @exchange_free slots 2
      snac.phase @exchange from input <packed, world 2, 2> to <scattered, world 2, 2> consume <copy> chunk 2 via @exchange_buf ready @exchange_ready free @exchange_free
      %0 = snac.rank
      %1, %2 = snac.epoch
      %3 = snac.half %1
      %4 = arith.constant 0 : index
      %5 = arith.constant 1 : index
      %6 = snac.max_units @exchange
      %7 = arith.ori %6, %5 : index
      %8 = arith.addi %1, %7 : index
      %c0 = arith.constant 0 : index
      snac.role producer blocks 64 {
        %9 = snac.units @exchange of %0
        scf.for %10 = %4 to %9 step %5 {
          snac.reclaim @exchange unit %10 of %0 epoch %1 prev %2 acquire system
          snac.stage @exchange unit %10 of %0 half %c0
          %11 = arith.addi %10, %5 : index
          %12 = arith.addi %1, %11 : index
          snac.notify @exchange unit %10 of %0 value %12 release system
        }
      }
      snac.role consumer blocks 64 {
        %13 = snac.staged_groups @exchange of %0
        scf.for %14 = %4 to %13 step %5 {
          %15 = snac.wait @exchange group %14 of %0 epoch %1 acquire system
          snac.consume @exchange group %14 of %0 half %3 after %15
          snac.ack @exchange group %14 of %0 epoch %1 release system
        }
        snac.finish @exchange of %0 value %8 release system
      }
      snac.role local blocks 16 {
        %16 = snac.staged_groups @exchange of %0
        %17 = snac.groups @exchange of %0
        scf.for %18 = %16 to %17 step %5 {
          %19 = snac.wait @exchange group %18 of %0 epoch %1 acquire system
          snac.consume @exchange group %18 of %0 half %3 after %19
        }
      }
      snac.advance %7
    }
    func.return
  }
}

