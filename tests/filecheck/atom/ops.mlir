// RUN: purlin-opt %s | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trip of every atom op and attribute: the custom form prints back as
// written (up to spacing), and the generic form re-parses to the same ops.
// The kernels began as convert-snac-to-atom output, edited by hand so that
// every target, mechanism, role kind, memory order and scope appears, with
// and without multicast objects (multimem) and packed f32x2 arithmetic.

// -- throughput, composed on sm_100: staging buffers, all three roles, --------
// -- 32-byte accesses, packed f32x2, vector and copy-engine datapaths ---------

func.func @composed(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy composed target sm_100 threads 512 smem 32768 : memref<8xf32>, memref<8xf32> {
    snac.buffer @reduce_buf staging halves 2 slots 2 elems 2 : f32
    snac.signals @reduce_ready slots 2
    snac.signals @reduce_free slots 2
    snac.phase @reduce from input <scattered, world 2, 4> to <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> consume <reduce sum> chunk 2 via @reduce_buf ready @reduce_ready free @reduce_free
    snac.buffer @forward_buf staging halves 2 slots 2 elems 2 : f32
    snac.signals @forward_ready slots 2
    snac.signals @forward_free slots 2
    snac.phase @forward from output <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> to <named, world 2, [(1, 0, 4, 0), (0, 4, 4, 1)]> consume <copy> chunk 2 via @forward_buf ready @forward_ready free @forward_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mr = snac.max_units @reduce
    %mf = snac.max_units @forward
    %most = arith.maxui %mr, %mf : index
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 16 {
      %n = snac.units @reduce of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @reduce unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @reduce unit %u of %rank half %half mech vector width 32
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @reduce unit %u of %rank value %flag release system
      }
    }
    atom.blocks reducer first 16 blocks 8 {
      %n = snac.groups @reduce of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @reduce group %g of %rank epoch %epoch acquire system
        atom.reduce @reduce group %g of %rank half %half after %tok mech cp_async width 32 packed_f32x2
        atom.wait_free @forward unit %g of %rank epoch %epoch prev %prev relaxed gpu
        atom.stage @forward unit %g of %rank half %half mech vector width 4
        atom.fence gpu
        atom.notify @forward unit %g of %rank value %next relaxed gpu
        atom.ack @reduce group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @reduce of %rank value %next release system
    }
    atom.blocks consumer first 24 blocks 1 {
      %n = snac.groups @forward of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @forward group %g of %rank epoch %epoch relaxed gpu
        atom.copy @forward group %g of %rank half %half after %tok mech cp_async width 8
        atom.ack @forward group %g of %rank epoch %epoch relaxed gpu
      }
      atom.fence gpu
      atom.finish @forward of %rank value %next relaxed gpu
    }
    snac.advance %adv
  }
  func.return
}

// -- latency on sm_90 with multicast objects: packets, multimem reduce --------

func.func @latency_multimem(%in: memref<8xbf16>, %out: memref<8xbf16>) {
  atom.kernel %in, %out world 2 regime latency strategy direct target sm_90 threads 256 smem 0 multimem : memref<8xbf16>, memref<8xbf16> {
    snac.buffer @exchange_buf packets halves 2 slots 2 elems 8 : bf16
    snac.signals @exchange_ready slots 2
    snac.signals @exchange_free slots 2
    snac.phase @exchange from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce max> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %most = snac.max_units @exchange
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    %flag = arith.addi %epoch, %c1 : index
    atom.blocks producer first 0 blocks 4 {
      %n = snac.units @exchange of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
        atom.put @exchange unit %u of %rank half %half flag %flag relaxed system mech packet width 16
      }
    }
    atom.blocks consumer first 4 blocks 4 {
      %n = snac.groups @exchange of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_packets @exchange group %g of %rank epoch %epoch acquire system
        atom.reduce @exchange group %g of %rank half %half after %tok mech multimem width 16
      }
      atom.fence system
      atom.finish @exchange of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -- throughput copy on sm_90: bulk staging, multimem stores ------------------

func.func @copy_bulk(%in: memref<4xf16>, %out: memref<8xf16>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy target sm_90 threads 1024 smem 65536 multimem : memref<4xf16>, memref<8xf16> {
    snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
    snac.signals @exchange_ready slots 2
    snac.signals @exchange_free slots 2
    snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %most = snac.max_units @exchange
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @exchange of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @exchange unit %u of %rank half %half mech bulk width 16
        %u1 = arith.addi %u, %c1 : index
        %f = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @exchange unit %u of %rank value %f release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @exchange of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
        atom.copy @exchange group %g of %rank half %half after %tok mech multimem width 16
        atom.ack @exchange group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @exchange of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// -- the same copy on sm_80 (cp_async) and sm_70 (vector, copy engine) ---------

func.func @copy_sm80(%in: memref<4xf16>, %out: memref<8xf16>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy target sm_80 threads 32 smem 32768 : memref<4xf16>, memref<8xf16> {
    snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
    snac.signals @exchange_ready slots 2
    snac.signals @exchange_free slots 2
    snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %most = snac.max_units @exchange
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @exchange of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @exchange unit %u of %rank half %half mech cp_async width 4
        %u1 = arith.addi %u, %c1 : index
        %f = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @exchange unit %u of %rank value %f release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @exchange of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
        atom.copy @exchange group %g of %rank half %half after %tok mech cp_async width 16
        atom.ack @exchange group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @exchange of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

func.func @copy_sm70(%in: memref<4xf16>, %out: memref<8xf16>) {
  atom.kernel %in, %out world 2 regime throughput strategy copy target sm_70 threads 128 smem 0 : memref<4xf16>, memref<8xf16> {
    snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
    snac.signals @exchange_ready slots 2
    snac.signals @exchange_free slots 2
    snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %most = snac.max_units @exchange
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    atom.blocks producer first 0 blocks 2 {
      %n = snac.units @exchange of %rank
      scf.for %u = %c0 to %n step %c1 {
        atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
        atom.stage @exchange unit %u of %rank half %half mech vector width 16
        %u1 = arith.addi %u, %c1 : index
        %f = arith.addi %epoch, %u1 : index
        atom.fence system
        atom.notify @exchange unit %u of %rank value %f release system
      }
    }
    atom.blocks consumer first 2 blocks 2 {
      %n = snac.groups @exchange of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
        atom.copy @exchange group %g of %rank half %half after %tok mech vector width 8
        atom.ack @exchange group %g of %rank epoch %epoch release system
      }
      atom.fence system
      atom.finish @exchange of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}

// CHECK-LABEL: func.func @composed(%in: memref<8xf32>, %out: memref<8xf32>) {
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy composed target sm_100 threads 512 smem 32768 : memref<8xf32>, memref<8xf32> {
// CHECK-NEXT:      snac.buffer @reduce_buf staging halves 2 slots 2 elems 2 : f32
// CHECK-NEXT:      snac.signals @reduce_ready slots 2
// CHECK-NEXT:      snac.signals @reduce_free slots 2
// CHECK-NEXT:      snac.phase @reduce from input <scattered, world 2, 4> to <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> consume <reduce sum> chunk 2 via @reduce_buf ready @reduce_ready free @reduce_free
// CHECK-NEXT:      snac.buffer @forward_buf staging halves 2 slots 2 elems 2 : f32
// CHECK-NEXT:      snac.signals @forward_ready slots 2
// CHECK-NEXT:      snac.signals @forward_free slots 2
// CHECK-NEXT:      snac.phase @forward from output <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> to <named, world 2, [(1, 0, 4, 0), (0, 4, 4, 1)]> consume <copy> chunk 2 via @forward_buf ready @forward_ready free @forward_free
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %half = snac.half %epoch
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %c1 = arith.constant 1 : index
// CHECK-NEXT:      %mr = snac.max_units @reduce
// CHECK-NEXT:      %mf = snac.max_units @forward
// CHECK-NEXT:      %most = arith.maxui %mr, %mf : index
// CHECK-NEXT:      %adv = arith.ori %most, %c1 : index
// CHECK-NEXT:      %next = arith.addi %epoch, %adv : index
// CHECK-NEXT:      atom.blocks producer first 0 blocks 16 {
// CHECK-NEXT:        %n = snac.units @reduce of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          atom.wait_free @reduce unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          atom.stage @reduce unit %u of %rank half %half mech vector width 32
// CHECK-NEXT:          %u1 = arith.addi %u, %c1 : index
// CHECK-NEXT:          %flag = arith.addi %epoch, %u1 : index
// CHECK-NEXT:          atom.fence system
// CHECK-NEXT:          atom.notify @reduce unit %u of %rank value %flag release system
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks reducer first 16 blocks 8 {
// CHECK-NEXT:        %n_1 = snac.groups @reduce of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = atom.wait_ready @reduce group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          atom.reduce @reduce group %g of %rank half %half after %tok mech cp_async width 32 packed_f32x2
// CHECK-NEXT:          atom.wait_free @forward unit %g of %rank epoch %epoch prev %prev relaxed gpu
// CHECK-NEXT:          atom.stage @forward unit %g of %rank half %half mech vector width 4
// CHECK-NEXT:          atom.fence gpu
// CHECK-NEXT:          atom.notify @forward unit %g of %rank value %next relaxed gpu
// CHECK-NEXT:          atom.ack @reduce group %g of %rank epoch %epoch release system
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence system
// CHECK-NEXT:        atom.finish @reduce of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks consumer first 24 blocks 1 {
// CHECK-NEXT:        %n_2 = snac.groups @forward of %rank
// CHECK-NEXT:        scf.for %g_1 = %c0 to %n_2 step %c1 {
// CHECK-NEXT:          %tok_1 = atom.wait_ready @forward group %g_1 of %rank epoch %epoch relaxed gpu
// CHECK-NEXT:          atom.copy @forward group %g_1 of %rank half %half after %tok_1 mech cp_async width 8
// CHECK-NEXT:          atom.ack @forward group %g_1 of %rank epoch %epoch relaxed gpu
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence gpu
// CHECK-NEXT:        atom.finish @forward of %rank value %next relaxed gpu
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @latency_multimem(%in: memref<8xbf16>, %out: memref<8xbf16>) {
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime latency strategy direct target sm_90 threads 256 smem 0 multimem : memref<8xbf16>, memref<8xbf16> {
// CHECK-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 2 elems 8 : bf16
// CHECK-NEXT:      snac.signals @exchange_ready slots 2
// CHECK-NEXT:      snac.signals @exchange_free slots 2
// CHECK-NEXT:      snac.phase @exchange from input <scattered, world 2, 4> to <scattered, world 2, 4> consume <reduce max> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %half = snac.half %epoch
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %c1 = arith.constant 1 : index
// CHECK-NEXT:      %most = snac.max_units @exchange
// CHECK-NEXT:      %adv = arith.ori %most, %c1 : index
// CHECK-NEXT:      %next = arith.addi %epoch, %adv : index
// CHECK-NEXT:      %flag = arith.addi %epoch, %c1 : index
// CHECK-NEXT:      atom.blocks producer first 0 blocks 4 {
// CHECK-NEXT:        %n = snac.units @exchange of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          atom.put @exchange unit %u of %rank half %half flag %flag relaxed system mech packet width 16
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks consumer first 4 blocks 4 {
// CHECK-NEXT:        %n_1 = snac.groups @exchange of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = atom.wait_packets @exchange group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          atom.reduce @exchange group %g of %rank half %half after %tok mech multimem width 16
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence system
// CHECK-NEXT:        atom.finish @exchange of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @copy_bulk(%in: memref<4xf16>, %out: memref<8xf16>) {
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy copy target sm_90 threads 1024 smem 65536 multimem : memref<4xf16>, memref<8xf16> {
// CHECK-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
// CHECK-NEXT:      snac.signals @exchange_ready slots 2
// CHECK-NEXT:      snac.signals @exchange_free slots 2
// CHECK-NEXT:      snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %half = snac.half %epoch
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %c1 = arith.constant 1 : index
// CHECK-NEXT:      %most = snac.max_units @exchange
// CHECK-NEXT:      %adv = arith.ori %most, %c1 : index
// CHECK-NEXT:      %next = arith.addi %epoch, %adv : index
// CHECK-NEXT:      atom.blocks producer first 0 blocks 2 {
// CHECK-NEXT:        %n = snac.units @exchange of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          atom.stage @exchange unit %u of %rank half %half mech bulk width 16
// CHECK-NEXT:          %u1 = arith.addi %u, %c1 : index
// CHECK-NEXT:          %f = arith.addi %epoch, %u1 : index
// CHECK-NEXT:          atom.fence system
// CHECK-NEXT:          atom.notify @exchange unit %u of %rank value %f release system
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks consumer first 2 blocks 2 {
// CHECK-NEXT:        %n_1 = snac.groups @exchange of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          atom.copy @exchange group %g of %rank half %half after %tok mech multimem width 16
// CHECK-NEXT:          atom.ack @exchange group %g of %rank epoch %epoch release system
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence system
// CHECK-NEXT:        atom.finish @exchange of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @copy_sm80(%in: memref<4xf16>, %out: memref<8xf16>) {
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy copy target sm_80 threads 32 smem 32768 : memref<4xf16>, memref<8xf16> {
// CHECK-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
// CHECK-NEXT:      snac.signals @exchange_ready slots 2
// CHECK-NEXT:      snac.signals @exchange_free slots 2
// CHECK-NEXT:      snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %half = snac.half %epoch
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %c1 = arith.constant 1 : index
// CHECK-NEXT:      %most = snac.max_units @exchange
// CHECK-NEXT:      %adv = arith.ori %most, %c1 : index
// CHECK-NEXT:      %next = arith.addi %epoch, %adv : index
// CHECK-NEXT:      atom.blocks producer first 0 blocks 2 {
// CHECK-NEXT:        %n = snac.units @exchange of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          atom.stage @exchange unit %u of %rank half %half mech cp_async width 4
// CHECK-NEXT:          %u1 = arith.addi %u, %c1 : index
// CHECK-NEXT:          %f = arith.addi %epoch, %u1 : index
// CHECK-NEXT:          atom.fence system
// CHECK-NEXT:          atom.notify @exchange unit %u of %rank value %f release system
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks consumer first 2 blocks 2 {
// CHECK-NEXT:        %n_1 = snac.groups @exchange of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          atom.copy @exchange group %g of %rank half %half after %tok mech cp_async width 16
// CHECK-NEXT:          atom.ack @exchange group %g of %rank epoch %epoch release system
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence system
// CHECK-NEXT:        atom.finish @exchange of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @copy_sm70(%in: memref<4xf16>, %out: memref<8xf16>) {
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy copy target sm_70 threads 128 smem 0 : memref<4xf16>, memref<8xf16> {
// CHECK-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 1 elems 4 : f16
// CHECK-NEXT:      snac.signals @exchange_ready slots 2
// CHECK-NEXT:      snac.signals @exchange_free slots 2
// CHECK-NEXT:      snac.phase @exchange from input <packed, world 2, 4> to <scattered, world 2, 4> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %half = snac.half %epoch
// CHECK-NEXT:      %c0 = arith.constant 0 : index
// CHECK-NEXT:      %c1 = arith.constant 1 : index
// CHECK-NEXT:      %most = snac.max_units @exchange
// CHECK-NEXT:      %adv = arith.ori %most, %c1 : index
// CHECK-NEXT:      %next = arith.addi %epoch, %adv : index
// CHECK-NEXT:      atom.blocks producer first 0 blocks 2 {
// CHECK-NEXT:        %n = snac.units @exchange of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          atom.wait_free @exchange unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          atom.stage @exchange unit %u of %rank half %half mech vector width 16
// CHECK-NEXT:          %u1 = arith.addi %u, %c1 : index
// CHECK-NEXT:          %f = arith.addi %epoch, %u1 : index
// CHECK-NEXT:          atom.fence system
// CHECK-NEXT:          atom.notify @exchange unit %u of %rank value %f release system
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      atom.blocks consumer first 2 blocks 2 {
// CHECK-NEXT:        %n_1 = snac.groups @exchange of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = atom.wait_ready @exchange group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          atom.copy @exchange group %g of %rank half %half after %tok mech vector width 8
// CHECK-NEXT:          atom.ack @exchange group %g of %rank epoch %epoch release system
// CHECK-NEXT:        }
// CHECK-NEXT:        atom.fence system
// CHECK-NEXT:        atom.finish @exchange of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// GENERIC: "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy composed>, target = #atom<target sm_100>, threads = 512 : i64, smem = 32768 : i64}> ({
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind producer>, first = 0 : i64, blocks = 16 : i64}> ({
// GENERIC: "atom.wait_free"(%u, %rank, %epoch, %prev) <{phase = @reduce, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC: "atom.stage"(%u, %rank, %half) <{phase = @reduce, mech = #atom<mechanism vector>, width = 32 : i64}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.notify"(%u, %rank, %flag) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind reducer>, first = 16 : i64, blocks = 8 : i64}> ({
// GENERIC: %tok = "atom.wait_ready"(%g, %rank, %epoch) <{phase = @reduce, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.reduce"(%g, %rank, %half, %tok) <{phase = @reduce, mech = #atom<mechanism cp_async>, width = 32 : i64, packed_f32x2}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.wait_free"(%g, %rank, %epoch, %prev) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index, index) -> ()
// GENERIC: "atom.stage"(%g, %rank, %half) <{phase = @forward, mech = #atom<mechanism vector>, width = 4 : i64}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope gpu>}> : () -> ()
// GENERIC: "atom.notify"(%g, %rank, %next) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> ()
// GENERIC: "atom.ack"(%g, %rank, %epoch) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind consumer>, first = 24 : i64, blocks = 1 : i64}> ({
// GENERIC: %tok_1 = "atom.wait_ready"(%g_1, %rank, %epoch) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.copy"(%g_1, %rank, %half, %tok_1) <{phase = @forward, mech = #atom<mechanism cp_async>, width = 8 : i64}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.ack"(%g_1, %rank, %epoch) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope gpu>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index) -> ()
// GENERIC: "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime latency>, strategy = #snac<strategy direct>, target = #atom<target sm_90>, threads = 256 : i64, smem = 0 : i64, multimem}> ({
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind producer>, first = 0 : i64, blocks = 4 : i64}> ({
// GENERIC: "atom.wait_free"(%u, %rank, %epoch, %prev) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC: "atom.put"(%u, %rank, %half, %flag) <{phase = @exchange, order = #snac<order relaxed>, scope = #snac<scope system>, mech = #atom<mechanism packet>, width = 16 : i64}> : (index, index, index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind consumer>, first = 4 : i64, blocks = 4 : i64}> ({
// GENERIC: %tok = "atom.wait_packets"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.reduce"(%g, %rank, %half, %tok) <{phase = @exchange, mech = #atom<mechanism multimem>, width = 16 : i64}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()
// GENERIC: "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy copy>, target = #atom<target sm_90>, threads = 1024 : i64, smem = 65536 : i64, multimem}> ({
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind producer>, first = 0 : i64, blocks = 2 : i64}> ({
// GENERIC: "atom.wait_free"(%u, %rank, %epoch, %prev) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC: "atom.stage"(%u, %rank, %half) <{phase = @exchange, mech = #atom<mechanism bulk>, width = 16 : i64}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.notify"(%u, %rank, %f) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind consumer>, first = 2 : i64, blocks = 2 : i64}> ({
// GENERIC: %tok = "atom.wait_ready"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.copy"(%g, %rank, %half, %tok) <{phase = @exchange, mech = #atom<mechanism multimem>, width = 16 : i64}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.ack"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()
// GENERIC: "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy copy>, target = #atom<target sm_80>, threads = 32 : i64, smem = 32768 : i64}> ({
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind producer>, first = 0 : i64, blocks = 2 : i64}> ({
// GENERIC: "atom.wait_free"(%u, %rank, %epoch, %prev) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC: "atom.stage"(%u, %rank, %half) <{phase = @exchange, mech = #atom<mechanism cp_async>, width = 4 : i64}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.notify"(%u, %rank, %f) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind consumer>, first = 2 : i64, blocks = 2 : i64}> ({
// GENERIC: %tok = "atom.wait_ready"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.copy"(%g, %rank, %half, %tok) <{phase = @exchange, mech = #atom<mechanism cp_async>, width = 16 : i64}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.ack"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()
// GENERIC: "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy copy>, target = #atom<target sm_70>, threads = 128 : i64, smem = 0 : i64}> ({
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind producer>, first = 0 : i64, blocks = 2 : i64}> ({
// GENERIC: "atom.wait_free"(%u, %rank, %epoch, %prev) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC: "atom.stage"(%u, %rank, %half) <{phase = @exchange, mech = #atom<mechanism vector>, width = 16 : i64}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.notify"(%u, %rank, %f) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.blocks"() <{kind = #snac<role_kind consumer>, first = 2 : i64, blocks = 2 : i64}> ({
// GENERIC: %tok = "atom.wait_ready"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC: "atom.copy"(%g, %rank, %half, %tok) <{phase = @exchange, mech = #atom<mechanism vector>, width = 8 : i64}> : (index, index, index, !snac.token) -> ()
// GENERIC: "atom.ack"(%g, %rank, %epoch) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC: "atom.fence"() <{scope = #snac<scope system>}> : () -> ()
// GENERIC: "atom.finish"(%rank, %next) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()

// -- symmetric on sm_90 at GPU scope: pushes, grants and drains -----------------

func.func @symmetric(%in: memref<8xf32>, %out: memref<8xf32>) {
  atom.kernel %in, %out world 2 regime throughput strategy composed symmetric target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
    snac.signals @reduce_ready slots 2
    snac.signals @reduce_free slots 2
    snac.phase @reduce from input <scattered, world 2, 4> to <scattered, world 2, 4> route to_owner consume <reduce sum> chunk 0 direct pull ready @reduce_ready free @reduce_free
    snac.signals @forward_ready slots 2
    snac.signals @forward_free slots 2
    snac.phase @forward from output <scattered, world 2, 4> to <scattered, world 2, 4> route from_owner consume <copy> chunk 0 direct push ready @forward_ready free @forward_free stage_local
    %0 = snac.rank
    %1, %2 = snac.epoch
    %3 = snac.half %1
    %4 = arith.constant 0 : index
    %5 = arith.constant 1 : index
    %6 = snac.max_units @reduce
    %7 = snac.max_units @forward
    %8 = arith.maxui %6, %7 : index
    %9 = arith.ori %8, %5 : index
    %10 = arith.addi %1, %9 : index
    %11 = arith.addi %1, %5 : index
    atom.blocks producer first 0 blocks 1 {
      %12 = snac.units @reduce of %0
      scf.for %13 = %4 to %12 step %5 {
        %14 = arith.addi %13, %5 : index
        %15 = arith.addi %1, %14 : index
        atom.fence gpu
        atom.notify @reduce unit %13 of %0 value %15 release gpu
      }
      atom.drain @reduce of %0 value %10 acquire gpu
    }
    atom.blocks reducer first 1 blocks 64 {
      %16 = snac.groups @reduce of %0
      scf.for %17 = %4 to %16 step %5 {
        %18 = atom.wait_ready @reduce group %17 of %0 epoch %1 acquire gpu
        atom.reduce @reduce group %17 of %0 half %3 after %18 mech vector width 16
        atom.wait_free @forward unit %17 of %0 epoch %1 prev %2 acquire gpu
        atom.push @forward unit %17 of %0 mech vector width 16 loads 8
        %19 = arith.addi %17, %5 : index
        %20 = arith.addi %1, %19 : index
        atom.fence gpu
        atom.notify @forward unit %17 of %0 value %20 release gpu
      }
      atom.fence gpu
      atom.finish @reduce of %0 value %10 release gpu
    }
    atom.blocks consumer first 65 blocks 1 {
      atom.grant @forward of %0 value %11 release gpu
      %21 = snac.groups @forward of %0
      scf.for %22 = %4 to %21 step %5 {
        %23 = atom.wait_ready @forward group %22 of %0 epoch %1 acquire gpu
      }
    }
    snac.advance %9
  }
  func.return
}
// CHECK-LABEL: func.func @symmetric
// CHECK-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy composed symmetric target sm_90 threads 512 smem 0 : memref<8xf32>, memref<8xf32> {
// CHECK:           atom.drain @reduce of %{{.*}} value %{{.*}} acquire gpu
// CHECK:           atom.push @forward unit %{{.*}} of %{{.*}} mech vector width 16 loads 8
// CHECK:           atom.grant @forward of %{{.*}} value %{{.*}} release gpu
// GENERIC-LABEL: sym_name = "symmetric"
// GENERIC:       "atom.kernel"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy composed>, symmetric, target = #atom<target sm_90>, threads = 512 : i64, smem = 0 : i64}> ({
// GENERIC:         "atom.push"(%{{.*}}, %{{.*}}) <{phase = @forward, mech = #atom<mechanism vector>, width = 16 : i64, loads = 8 : i64}> : (index, index) -> ()
