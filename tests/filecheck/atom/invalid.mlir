// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: purlin-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FAILS

// Every case must fail: none prints its module.
// FAILS-NOT: builtin.module

// One case per verifier rule of the atom dialect, each with its exact message.
// The atom ops are also snac ops: the snac rules are in ../snac/invalid.mlir.

// -- atom.kernel ---------------------------------------------------------------

func.func @threads_not_warps(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 100 smem 0 : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'atom.kernel': threads per block must be a multiple of 32 in [32, 1024], got 100
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @threads_too_many(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 2048 smem 0 : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'atom.kernel': threads per block must be a multiple of 32 in [32, 1024], got 2048
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @threads_zero(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 0 smem 0 : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'atom.kernel': threads per block must be a multiple of 32 in [32, 1024], got 0
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @smem_negative(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem -1 : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'atom.kernel': shared memory must be non-negative, got -1
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_kernel_on_sm80(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_80 threads 512 smem 0 multimem : memref<8xf32>, memref<8xf32> {
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'atom.kernel': multicast objects need sm_90 or newer, the target is sm_80
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

// -- atom.blocks ---------------------------------------------------------------

func.func @blocks_outside_kernel(%in: memref<8xf32>, %out: memref<8xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    atom.blocks producer first 0 blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'atom.blocks': must be directly inside an atom.kernel
      %u = arith.constant 0 : index
    }
  }
  func.return
}

// -----

func.func @blocks_first_negative(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first -2 blocks 2 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'atom.blocks': first block must be non-negative, got -2
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

// -- datapath atoms: placement and mechanism by generation ---------------------

func.func @stage_outside_kernel(%in: memref<8xf32>, %out: memref<8xf32>) {
  snac.program %in, %out world 2 regime throughput strategy copy : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    snac.role producer blocks 1 {
      %u = arith.constant 0 : index
      atom.stage @p unit %u of %rank half %half mech vector width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'atom.stage': must be inside an atom.kernel
    }
  }
  func.return
}

// -----

func.func @cp_async_on_sm70(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_70 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': mechanism 'cp_async' needs sm_80 or newer, the target is sm_70
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @bulk_on_sm80(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_80 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech bulk width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': mechanism 'bulk' needs sm_90 or newer, the target is sm_80
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_on_sm80(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_80 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': mechanism 'multimem' needs sm_90 or newer, the target is sm_80
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

// -- access widths -------------------------------------------------------------

func.func @width_32_on_sm90(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech vector width 32
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': access width 32 bytes is not valid for f32 on sm_90: expected a multiple of 4 among 4, 8, 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @width_2_for_f32(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_100 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech vector width 2
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': access width 2 bytes is not valid for f32 on sm_100: expected a multiple of 4 among 4, 8, 16, 32
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @width_12_for_bf16(%in: memref<8xbf16>, %out: memref<8xbf16>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_100 threads 512 smem 0 : memref<8xbf16>, memref<8xbf16> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : bf16
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 12
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': access width 12 bytes is not valid for bf16 on sm_100: expected a multiple of 2 among 4, 8, 16, 32
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @width_64_on_sm100(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_100 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech vector width 64
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': access width 64 bytes is not valid for f32 on sm_100: expected a multiple of 4 among 4, 8, 16, 32
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @packet_width_8(%in: memref<8xbf16>, %out: memref<8xbf16>) {
  atom.kernel %in, %out world 2 regime latency strategy direct target sm_90 threads 512 smem 0 : memref<8xbf16>, memref<8xbf16> {
    snac.buffer @buf packets halves 2 slots 2 elems 8 : bf16
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 0 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 1 : index
    %flag = arith.addi %epoch, %c1 : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.put @p unit %u of %rank half %half flag %flag relaxed system mech packet width 8
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.put': packets are 16-byte stores, got width 8
      }
    }
    snac.advance %adv
  }
  func.return
}

// -----

// -- multimem ------------------------------------------------------------------

func.func @multimem_without_kernel_multimem(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': multimem needs a kernel with multicast objects bound (multimem)
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_reduce_fp8(%in: memref<8xf8E4M3FN>, %out: memref<8xf8E4M3FN>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 multimem : memref<8xf8E4M3FN>, memref<8xf8E4M3FN> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f8E4M3FN
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': multimem cannot reduce fp8e4m3 with 'sum' (fp8 and prod never); supported: {'f32': ['sum'], 'f16': ['max', 'min', 'sum'], 'bf16': ['max', 'min', 'sum']}
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_reduce_prod(%in: memref<8xbf16>, %out: memref<8xbf16>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 multimem : memref<8xbf16>, memref<8xbf16> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : bf16
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce prod> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': multimem cannot reduce bf16 with 'prod' (fp8 and prod never); supported: {'f32': ['sum'], 'f16': ['max', 'min', 'sum'], 'bf16': ['max', 'min', 'sum']}
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_max_f32(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 multimem : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce max> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': multimem cannot reduce f32 with 'max' (fp8 and prod never); supported: {'f32': ['sum'], 'f16': ['max', 'min', 'sum'], 'bf16': ['max', 'min', 'sum']}
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @multimem_store_fp8(%in: memref<8xf8E4M3FN>, %out: memref<8xf8E4M3FN>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 multimem : memref<8xf8E4M3FN>, memref<8xf8E4M3FN> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f8E4M3FN
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech multimem width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.stage': multimem does not store fp8e4m3
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.copy @p group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

// -- consume atoms -------------------------------------------------------------

func.func @copy_on_reducing_phase(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.copy @p group %g of %rank half %half after %tok mech cp_async width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.copy': phase '@p' reduces; use atom.reduce
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @reduce_on_copying_phase(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': phase '@p' copies; use atom.copy
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @packed_f32x2_on_sm90(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy direct target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.buffer @buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce sum> chunk 4 via @buf ready @ready free @free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %adv = arith.constant 3 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @p of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @p unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @p unit %u of %rank half %half mech cp_async width 16
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @p unit %u of %rank value %flag release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @p of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @p group %g of %rank epoch %epoch acquire system
        atom.reduce @p group %g of %rank half %half after %tok mech cp_async width 16 packed_f32x2
// CHECK: invalid.mlir:[[# @LINE - 1]]:9: error: 'atom.reduce': packed f32x2 arithmetic needs sm_100
        atom.ack @p group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @p of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -----

func.func @stream_push_by_threads(%in: memref<4xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy symmetric target sm_90 threads 32 smem 0 : memref<4xf32>, memref<8xf32> {
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @ready free @free
    %r = snac.rank
    %c0 = arith.constant 0 : index
    atom.blocks stream first 0 blocks 1 {
// CHECK: invalid.mlir:[[# @LINE - 1]]:5: error: 'atom.blocks': a stream role's pushes are the copy engine's, got mech 'vector'
      atom.push @p unit %c0 of %r mech vector width 16
    }
  }
  func.return
}

// -----

func.func @copy_engine_outside_a_stream_role(%in: memref<4xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy symmetric target sm_90 threads 32 smem 0 : memref<4xf32>, memref<8xf32> {
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @ready free @free
    %r = snac.rank
    %c0 = arith.constant 0 : index
    atom.blocks producer first 0 blocks 4 {
      atom.push @p unit %c0 of %r mech copy_engine width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'atom.push': the copy engine makes only the pushes of a stream role (the host issues them between the role's signal steps)
    }
  }
  func.return
}

// -----

func.func @copy_engine_stages(%in: memref<4xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy target sm_90 threads 32 smem 0 : memref<4xf32>, memref<8xf32> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f32
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 4 via @b ready @ready free @free
    %r = snac.rank
    %e, %v = snac.epoch
    %h = snac.half %e
    %c0 = arith.constant 0 : index
    atom.blocks producer first 0 blocks 1 {
      atom.stage @p unit %c0 of %r half %h mech copy_engine width 16
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'atom.stage': the copy engine makes only the pushes of a stream role (the host issues them between the role's signal steps)
    }
  }
  func.return
}

// -----

func.func @push_loads_not_offered(%in: memref<4xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy symmetric target sm_90 threads 32 smem 0 : memref<4xf32>, memref<8xf32> {
    snac.signals @ready slots 2
    snac.signals @free slots 2
    snac.phase @p from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 direct push ready @ready free @free
    %r = snac.rank
    %c0 = arith.constant 0 : index
    atom.blocks producer first 0 blocks 4 {
      atom.push @p unit %c0 of %r mech vector width 16 loads 6
// CHECK: invalid.mlir:[[# @LINE - 1]]:7: error: 'atom.push': loads 6 with mech 'vector': expected mech 'vector' and 8 loads in flight a thread
    }
  }
  func.return
}
