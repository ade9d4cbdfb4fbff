// RUN: purlin-opt %s | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trip of every snac op and attribute: the custom form prints back as
// written (up to spacing), and the generic form re-parses to the same ops.
// The programs began as convert-coll-to-snac output, edited by hand so that
// every role kind, memory order and scope appears.

// -- throughput, composed: staging buffers, two phases, all three roles -------

func.func @composed(%in: memref<8xf32>, %out: memref<8xf32>) {
  snac.program %in, %out world 2 regime throughput strategy composed : memref<8xf32>, memref<8xf32> {
    snac.buffer @reduce_buf staging halves 2 slots 4 elems 2 : f32
    snac.signals @reduce_ready slots 2
    snac.signals @reduce_free slots 2
    snac.phase @reduce from input <scattered, world 2, 4> to <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> consume <reduce sum> chunk 2 via @reduce_buf ready @reduce_ready free @reduce_free deterministic
    snac.buffer @forward_buf staging halves 2 slots 1 elems 0 : f32
    snac.signals @forward_ready slots 2
    snac.signals @forward_free slots 2
    snac.phase @forward from output <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> to <named, world 2, [(1, 0, 4, 0), (0, 4, 4, 1)]> consume <copy> chunk 0 via @forward_buf ready @forward_ready free @forward_free
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
    snac.role producer blocks 16 {
      %n = snac.units @reduce of %rank
      scf.for %u = %c0 to %n step %c1 {
        snac.reclaim @reduce unit %u of %rank epoch %epoch prev %prev acquire system
        snac.stage @reduce unit %u of %rank half %half
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        snac.notify @reduce unit %u of %rank value %flag release system
      }
    }
    snac.role reducer blocks 8 {
      %n = snac.groups @reduce of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = snac.wait @reduce group %g of %rank epoch %epoch acquire system
        snac.consume @reduce group %g of %rank half %half after %tok
        snac.reclaim @forward unit %g of %rank epoch %epoch prev %prev relaxed gpu
        snac.stage @forward unit %g of %rank half %half
        snac.notify @forward unit %g of %rank value %next relaxed gpu
        snac.ack @reduce group %g of %rank epoch %epoch release system
      }
      snac.finish @reduce of %rank value %next release system
    }
    snac.role consumer blocks 1 {
      %n = snac.groups @forward of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = snac.wait @forward group %g of %rank epoch %epoch relaxed gpu
        snac.consume @forward group %g of %rank half %half after %tok
        snac.ack @forward group %g of %rank epoch %epoch relaxed gpu
      }
      snac.finish @forward of %rank value %next relaxed gpu
    }
    snac.role local blocks 2 {
      %first = snac.staged_groups @forward of %rank
      %all = snac.groups @forward of %rank
      scf.for %l = %first to %all step %c1 {
        %ltok = snac.wait @forward group %l of %rank epoch %epoch relaxed gpu
        snac.consume @forward group %l of %rank half %half after %ltok
      }
    }
    snac.advance %adv
  }
  func.return
}
// CHECK-LABEL: func.func @composed
// CHECK-NEXT:    snac.program %in, %out world 2 regime throughput strategy composed : memref<8xf32>, memref<8xf32> {
// CHECK-NEXT:      snac.buffer @reduce_buf staging halves 2 slots 4 elems 2 : f32
// CHECK-NEXT:      snac.signals @reduce_ready slots 2
// CHECK-NEXT:      snac.signals @reduce_free slots 2
// CHECK-NEXT:      snac.phase @reduce from input <scattered, world 2, 4> to <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> consume <reduce sum> chunk 2 via @reduce_buf ready @reduce_ready free @reduce_free deterministic
// CHECK-NEXT:      snac.buffer @forward_buf staging halves 2 slots 1 elems 0 : f32
// CHECK-NEXT:      snac.signals @forward_ready slots 2
// CHECK-NEXT:      snac.signals @forward_free slots 2
// CHECK-NEXT:      snac.phase @forward from output <named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]> to <named, world 2, [(1, 0, 4, 0), (0, 4, 4, 1)]> consume <copy> chunk 0 via @forward_buf ready @forward_ready free @forward_free
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
// CHECK-NEXT:      snac.role producer blocks 16 {
// CHECK-NEXT:        %n = snac.units @reduce of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          snac.reclaim @reduce unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          snac.stage @reduce unit %u of %rank half %half
// CHECK-NEXT:          %u1 = arith.addi %u, %c1 : index
// CHECK-NEXT:          %flag = arith.addi %epoch, %u1 : index
// CHECK-NEXT:          snac.notify @reduce unit %u of %rank value %flag release system
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.role reducer blocks 8 {
// CHECK-NEXT:        %n_1 = snac.groups @reduce of %rank
// CHECK-NEXT:        scf.for %g = %c0 to %n_1 step %c1 {
// CHECK-NEXT:          %tok = snac.wait @reduce group %g of %rank epoch %epoch acquire system
// CHECK-NEXT:          snac.consume @reduce group %g of %rank half %half after %tok
// CHECK-NEXT:          snac.reclaim @forward unit %g of %rank epoch %epoch prev %prev relaxed gpu
// CHECK-NEXT:          snac.stage @forward unit %g of %rank half %half
// CHECK-NEXT:          snac.notify @forward unit %g of %rank value %next relaxed gpu
// CHECK-NEXT:          snac.ack @reduce group %g of %rank epoch %epoch release system
// CHECK-NEXT:        }
// CHECK-NEXT:        snac.finish @reduce of %rank value %next release system
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.role consumer blocks 1 {
// CHECK-NEXT:        %n_2 = snac.groups @forward of %rank
// CHECK-NEXT:        scf.for %g_1 = %c0 to %n_2 step %c1 {
// CHECK-NEXT:          %tok_1 = snac.wait @forward group %g_1 of %rank epoch %epoch relaxed gpu
// CHECK-NEXT:          snac.consume @forward group %g_1 of %rank half %half after %tok_1
// CHECK-NEXT:          snac.ack @forward group %g_1 of %rank epoch %epoch relaxed gpu
// CHECK-NEXT:        }
// CHECK-NEXT:        snac.finish @forward of %rank value %next relaxed gpu
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.role local blocks 2 {
// CHECK-NEXT:        %first = snac.staged_groups @forward of %rank
// CHECK-NEXT:        %all = snac.groups @forward of %rank
// CHECK-NEXT:        scf.for %l = %first to %all step %c1 {
// CHECK-NEXT:          %ltok = snac.wait @forward group %l of %rank epoch %epoch relaxed gpu
// CHECK-NEXT:          snac.consume @forward group %l of %rank half %half after %ltok
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.advance %adv
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// GENERIC-LABEL: sym_name = "composed"
// GENERIC:       "snac.program"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy composed>}> ({
// GENERIC-NEXT:    "snac.buffer"() <{sym_name = "reduce_buf", kind = #snac<buffer_kind staging>, halves = 2 : i64, slots = 4 : i64, elems = 2 : i64, elem_type = f32}> : () -> ()
// GENERIC-NEXT:    "snac.signals"() <{sym_name = "reduce_ready", slots = 2 : i64}> : () -> ()
// GENERIC-NEXT:    "snac.signals"() <{sym_name = "reduce_free", slots = 2 : i64}> : () -> ()
// GENERIC-NEXT:    "snac.phase"() <{sym_name = "reduce", source = #snac<source input>, src_layout = #coll.layout<scattered, world 2, 4>, dst_layout = #coll.layout<named, world 2, [(0, 0, 4, 0), (1, 4, 4, 1)]>, consume = #coll.consume<reduce sum>, chunk = 2 : i64, buffer = @reduce_buf, ready = @reduce_ready, free = @reduce_free, deterministic}> : () -> ()
// GENERIC:         "snac.phase"() <{sym_name = "forward", source = #snac<source output>, {{.*}}, consume = #coll.consume<copy>, chunk = 0 : i64, buffer = @forward_buf, ready = @forward_ready, free = @forward_free}> : () -> ()
// GENERIC-NEXT:    %rank = "snac.rank"() : () -> index
// GENERIC-NEXT:    %epoch, %prev = "snac.epoch"() : () -> (index, index)
// GENERIC-NEXT:    %half = "snac.half"(%epoch) : (index) -> index
// GENERIC:         %mr = "snac.max_units"() <{phase = @reduce}> : () -> index
// GENERIC:         "snac.role"() <{kind = #snac<role_kind producer>, blocks = 16 : i64}> ({
// GENERIC-NEXT:      %n = "snac.units"(%rank) <{phase = @reduce}> : (index) -> index
// GENERIC:             "snac.reclaim"(%u, %rank, %epoch, %prev) <{phase = @reduce, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC-NEXT:        "snac.stage"(%u, %rank, %half) <{phase = @reduce}> : (index, index, index) -> ()
// GENERIC:             "snac.notify"(%u, %rank, %flag) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC:         "snac.role"() <{kind = #snac<role_kind reducer>, blocks = 8 : i64}> ({
// GENERIC-NEXT:      %n_1 = "snac.groups"(%rank) <{phase = @reduce}> : (index) -> index
// GENERIC:             %tok = "snac.wait"(%g, %rank, %epoch) <{phase = @reduce, order = #snac<order acquire>, scope = #snac<scope system>}> : (index, index, index) -> !snac.token
// GENERIC-NEXT:        "snac.consume"(%g, %rank, %half, %tok) <{phase = @reduce}> : (index, index, index, !snac.token) -> ()
// GENERIC-NEXT:        "snac.reclaim"(%g, %rank, %epoch, %prev) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index, index) -> ()
// GENERIC:             "snac.notify"(%g, %rank, %next) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> ()
// GENERIC-NEXT:        "snac.ack"(%g, %rank, %epoch) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index, index) -> ()
// GENERIC:           "snac.finish"(%rank, %next) <{phase = @reduce, order = #snac<order release>, scope = #snac<scope system>}> : (index, index) -> ()
// GENERIC:         "snac.role"() <{kind = #snac<role_kind consumer>, blocks = 1 : i64}> ({
// GENERIC:             %tok_1 = "snac.wait"(%g_1, %rank, %epoch) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> !snac.token
// GENERIC:             "snac.ack"(%g_1, %rank, %epoch) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index, index) -> ()
// GENERIC:           "snac.finish"(%rank, %next) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index) -> ()
// GENERIC:         "snac.advance"(%adv) : (index) -> ()

// -- latency: a packet window, put with both allowed orders ---------------------

func.func @latency(%in: memref<16xbf16>, %out: memref<64xbf16>) {
  snac.program %in, %out world 4 regime latency strategy copy : memref<16xbf16>, memref<64xbf16> {
    snac.buffer @exchange_buf packets halves 2 slots 4 elems 16 : bf16
    snac.signals @exchange_ready slots 4
    snac.signals @exchange_free slots 4
    snac.phase @exchange from input <packed, world 4, 16> to <scattered, world 4, 16> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %half = snac.half %epoch
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %most = snac.max_units @exchange
    %adv = arith.ori %most, %c1 : index
    %next = arith.addi %epoch, %adv : index
    %flag = arith.addi %epoch, %c1 : index
    snac.role producer blocks 16 {
      %n = snac.units @exchange of %rank
      scf.for %u = %c0 to %n step %c1 {
        snac.reclaim @exchange unit %u of %rank epoch %epoch prev %prev acquire system
        snac.put @exchange unit %u of %rank half %half flag %flag relaxed system
        snac.put @exchange unit %u of %rank half %half flag %flag release gpu
      }
    }
    snac.role consumer blocks 16 {
      %n = snac.groups @exchange of %rank
      scf.for %g = %c0 to %n step %c1 {
        %tok = snac.wait @exchange group %g of %rank epoch %epoch acquire system
        snac.consume @exchange group %g of %rank half %half after %tok
      }
      snac.finish @exchange of %rank value %next release system
    }
    snac.advance %adv
  }
  func.return
}
// CHECK-LABEL: func.func @latency
// CHECK-NEXT:    snac.program %in, %out world 4 regime latency strategy copy : memref<16xbf16>, memref<64xbf16> {
// CHECK-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 16 : bf16
// CHECK-NEXT:      snac.signals @exchange_ready slots 4
// CHECK-NEXT:      snac.signals @exchange_free slots 4
// CHECK-NEXT:      snac.phase @exchange from input <packed, world 4, 16> to <scattered, world 4, 16> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// CHECK:           snac.role producer blocks 16 {
// CHECK-NEXT:        %n = snac.units @exchange of %rank
// CHECK-NEXT:        scf.for %u = %c0 to %n step %c1 {
// CHECK-NEXT:          snac.reclaim @exchange unit %u of %rank epoch %epoch prev %prev acquire system
// CHECK-NEXT:          snac.put @exchange unit %u of %rank half %half flag %flag relaxed system
// CHECK-NEXT:          snac.put @exchange unit %u of %rank half %half flag %flag release gpu
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      snac.role consumer blocks 16 {
// CHECK:           snac.advance %adv

// GENERIC-LABEL: sym_name = "latency"
// GENERIC:       "snac.program"(%in, %out) <{world = 4 : i64, regime = #snac<regime latency>, strategy = #snac<strategy copy>}> ({
// GENERIC-NEXT:    "snac.buffer"() <{sym_name = "exchange_buf", kind = #snac<buffer_kind packets>, halves = 2 : i64, slots = 4 : i64, elems = 16 : i64, elem_type = bf16}> : () -> ()
// GENERIC:         "snac.put"(%u, %rank, %half, %flag) <{phase = @exchange, order = #snac<order relaxed>, scope = #snac<scope system>}> : (index, index, index, index) -> ()
// GENERIC-NEXT:    "snac.put"(%u, %rank, %half, %flag) <{phase = @exchange, order = #snac<order release>, scope = #snac<scope gpu>}> : (index, index, index, index) -> ()

// -- dynamic counts: the optional counts operand, throughput direct ------------

func.func @counts(%in: memref<64xf16>, %out: memref<16xf16>, %n: memref<4xi64>) {
  snac.program %in, %out counts %n world 4 regime throughput strategy direct : memref<64xf16>, memref<16xf16>, memref<4xi64> {
    snac.buffer @exchange_buf staging halves 2 slots 2 elems 1024 : f16
    snac.signals @exchange_ready slots 4
    snac.signals @exchange_free slots 4
    snac.phase @exchange from input <scattered_v, world 4, ?> to <packed_v, world 4, ?> consume <reduce max> chunk 1024 via @exchange_buf ready @exchange_ready free @exchange_free deterministic
    snac.phase @again from input <scattered_v, world 4, ?> to <packed_v, world 4, ?> consume <reduce min> chunk 1024 via @exchange_buf ready @exchange_ready free @exchange_free
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %most = snac.max_units @exchange
    snac.advance %most
  }
  func.return
}
// CHECK-LABEL: func.func @counts
// CHECK-NEXT:    snac.program %in, %out counts %n world 4 regime throughput strategy direct : memref<64xf16>, memref<16xf16>, memref<4xi64> {
// CHECK-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 1024 : f16
// CHECK-NEXT:      snac.signals @exchange_ready slots 4
// CHECK-NEXT:      snac.signals @exchange_free slots 4
// CHECK-NEXT:      snac.phase @exchange from input <scattered_v, world 4, ?> to <packed_v, world 4, ?> consume <reduce max> chunk 1024 via @exchange_buf ready @exchange_ready free @exchange_free deterministic
// CHECK-NEXT:      snac.phase @again from input <scattered_v, world 4, ?> to <packed_v, world 4, ?> consume <reduce min> chunk 1024 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// CHECK-NEXT:      %rank = snac.rank
// CHECK-NEXT:      %epoch, %prev = snac.epoch
// CHECK-NEXT:      %most = snac.max_units @exchange
// CHECK-NEXT:      snac.advance %most
// CHECK-NEXT:    }

// GENERIC-LABEL: sym_name = "counts"
// GENERIC:       "snac.program"(%in, %out, %n) <{world = 4 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy direct>}> ({
// GENERIC:         "snac.advance"(%most) : (index) -> ()

// -- dynamic counts in the latency regime: empty slices as flag-only units -----

func.func @empty_units(%in: memref<8xf32>, %out: memref<24xf32>, %n: memref<3xi64>) {
  snac.program %in, %out counts %n world 3 regime latency strategy copy : memref<8xf32>, memref<24xf32>, memref<3xi64> {
    snac.buffer @exchange_buf packets halves 2 slots 3 elems 30 : f32
    snac.signals @exchange_ready slots 3
    snac.signals @exchange_free slots 3
    snac.phase @exchange from input <packed_v, world 3, ?> to <scattered_v, world 3, ?> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free empty_units
    %rank = snac.rank
    %epoch, %prev = snac.epoch
    %most = snac.max_units @exchange
    snac.advance %most
  }
  func.return
}
// CHECK-LABEL: func.func @empty_units
// CHECK:           snac.phase @exchange from input <packed_v, world 3, ?> to <scattered_v, world 3, ?> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free empty_units{{$}}

// GENERIC-LABEL: sym_name = "empty_units"
// GENERIC:       "snac.phase"() <{{.*}}empty_units{{.*}}}> : () -> ()

// -- every element type, world 1 --------------------------------------------

func.func @dtypes(%h: memref<4xf16>, %e4: memref<4xf8E4M3FN>, %e5: memref<4xf8E5M2>) {
  snac.program %h, %h world 1 regime latency strategy direct : memref<4xf16>, memref<4xf16> {
    snac.buffer @b packets halves 2 slots 1 elems 0 : f16
    snac.signals @s slots 1
    snac.phase @p from input <scattered, world 1, 4> to <scattered, world 1, 4> consume <reduce prod> chunk 0 via @b ready @s free @s
  }
  snac.program %e4, %e4 world 1 regime throughput strategy direct : memref<4xf8E4M3FN>, memref<4xf8E4M3FN> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f8E4M3FN
    snac.signals @s slots 1
    snac.phase @p from input <scattered, world 1, 4> to <scattered, world 1, 4> consume <reduce sum> chunk 4 via @b ready @s free @s
  }
  snac.program %e5, %e5 world 1 regime throughput strategy copy : memref<4xf8E5M2>, memref<4xf8E5M2> {
    snac.buffer @b staging halves 2 slots 1 elems 4 : f8E5M2
    snac.signals @s slots 1
    snac.phase @p from input <packed, world 1, 4> to <scattered, world 1, 4> consume <copy> chunk 4 via @b ready @s free @s
  }
  func.return
}
// CHECK-LABEL: func.func @dtypes
// CHECK-NEXT:    snac.program %h, %h world 1 regime latency strategy direct : memref<4xf16>, memref<4xf16> {
// CHECK-NEXT:      snac.buffer @b packets halves 2 slots 1 elems 0 : f16
// CHECK-NEXT:      snac.signals @s slots 1
// CHECK-NEXT:      snac.phase @p from input <scattered, world 1, 4> to <scattered, world 1, 4> consume <reduce prod> chunk 0 via @b ready @s free @s
// CHECK-NEXT:    }
// CHECK-NEXT:    snac.program %e4, %e4 world 1 regime throughput strategy direct : memref<4xf8E4M3FN>, memref<4xf8E4M3FN> {
// CHECK-NEXT:      snac.buffer @b staging halves 2 slots 1 elems 4 : f8E4M3FN
// CHECK-NEXT:      snac.signals @s slots 1
// CHECK-NEXT:      snac.phase @p from input <scattered, world 1, 4> to <scattered, world 1, 4> consume <reduce sum> chunk 4 via @b ready @s free @s
// CHECK-NEXT:    }
// CHECK-NEXT:    snac.program %e5, %e5 world 1 regime throughput strategy copy : memref<4xf8E5M2>, memref<4xf8E5M2> {
// CHECK-NEXT:      snac.buffer @b staging halves 2 slots 1 elems 4 : f8E5M2
// CHECK-NEXT:      snac.signals @s slots 1
// CHECK-NEXT:      snac.phase @p from input <packed, world 1, 4> to <scattered, world 1, 4> consume <copy> chunk 4 via @b ready @s free @s
// CHECK-NEXT:    }

// -- symmetric: in place between the ranks' buffers (direct pull, push) -------

func.func @symmetric(%in: memref<8xf32>, %out: memref<8xf32>) {
  snac.program %in, %out world 2 regime throughput strategy composed symmetric : memref<8xf32>, memref<8xf32> {
    snac.signals @reduce_ready slots 2
    snac.signals @reduce_free slots 2
    snac.phase @reduce from input <scattered, world 2, 4> to <scattered, world 2, 4> route to_owner consume <reduce sum> chunk 0 direct pull ready @reduce_ready free @reduce_free
    snac.signals @forward_ready slots 2
    snac.signals @forward_free slots 2
    snac.phase @forward from output <scattered, world 2, 4> to <scattered, world 2, 4> route from_owner consume <copy> chunk 0 direct push ready @forward_ready free @forward_free stage_local
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
    %open = arith.addi %epoch, %c1 : index
    snac.role producer blocks 1 {
      %n = snac.units @reduce of %rank
      scf.for %u = %c0 to %n step %c1 {
        %u1 = arith.addi %u, %c1 : index
        %flag = arith.addi %epoch, %u1 : index
        snac.notify @reduce unit %u of %rank value %flag release gpu
      }
      snac.drain @reduce of %rank value %next acquire gpu
    }
    snac.role reducer blocks 64 {
      %n = snac.groups @reduce of %rank
      scf.for %g = %c0 to %n step %c1 {
        %t = snac.wait @reduce group %g of %rank epoch %epoch acquire gpu
        snac.consume @reduce group %g of %rank half %half after %t
        snac.reclaim @forward unit %g of %rank epoch %epoch prev %prev acquire gpu
        snac.push @forward unit %g of %rank
        %g1 = arith.addi %g, %c1 : index
        %flag = arith.addi %epoch, %g1 : index
        snac.notify @forward unit %g of %rank value %flag relaxed system
      }
      snac.finish @reduce of %rank value %next release gpu
    }
    snac.role consumer blocks 1 {
      snac.grant @forward of %rank value %open relaxed gpu
      %n = snac.groups @forward of %rank
      scf.for %g = %c0 to %n step %c1 {
        %t = snac.wait @forward group %g of %rank epoch %epoch acquire gpu
      }
    }
    snac.advance %adv
  }
  func.return
}
// CHECK-LABEL: func.func @symmetric
// CHECK-NEXT:    snac.program %in, %out world 2 regime throughput strategy composed symmetric : memref<8xf32>, memref<8xf32> {
// CHECK:           snac.phase @reduce from input <scattered, world 2, 4> to <scattered, world 2, 4> route to_owner consume <reduce sum> chunk 0 direct pull ready @reduce_ready free @reduce_free
// CHECK:           snac.phase @forward from output <scattered, world 2, 4> to <scattered, world 2, 4> route from_owner consume <copy> chunk 0 direct push ready @forward_ready free @forward_free stage_local
// CHECK:           snac.drain @reduce of %rank value %next acquire gpu
// CHECK:           snac.push @forward unit %g of %rank
// CHECK:           snac.notify @forward unit %g of %rank value %{{.*}} relaxed system
// CHECK:           snac.finish @reduce of %rank value %next release gpu
// CHECK:           snac.grant @forward of %rank value %open relaxed gpu
// GENERIC-LABEL: sym_name = "symmetric"
// GENERIC:       "snac.program"(%in, %out) <{world = 2 : i64, regime = #snac<regime throughput>, strategy = #snac<strategy composed>, symmetric}> ({
// GENERIC:         "snac.phase"() <{sym_name = "reduce", {{.*}}, chunk = 0 : i64, transfer = #snac<transfer pull>, ready = @reduce_ready, free = @reduce_free}> : () -> ()
// GENERIC:         "snac.drain"(%rank, %next) <{phase = @reduce, order = #snac<order acquire>, scope = #snac<scope gpu>}> : (index, index) -> ()
// GENERIC:         "snac.push"(%g, %rank) <{phase = @forward}> : (index, index) -> ()
// GENERIC:         "snac.grant"(%rank, %open) <{phase = @forward, order = #snac<order relaxed>, scope = #snac<scope gpu>}> : (index, index) -> ()
