// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac' | filecheck %s --check-prefix=AUTO
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency arch=sm_80}' | filecheck %s --check-prefix=LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=32 slots=2 arch=sm_100}' | filecheck %s --check-prefix=THR
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=32 slots=2 arch=sm_100}' | purlin-opt | filecheck %s --check-prefix=THR

// Option values the pass does not know, and strategies that do not apply, are
// one diagnostic each, never a traceback.
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=fast}' 2>&1 | filecheck %s --check-prefix=ERR-REGIME
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{strategy=twoshot}' 2>&1 | filecheck %s --check-prefix=ERR-STRATEGY
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{arch=sm_70}' 2>&1 | filecheck %s --check-prefix=ERR-ARCH
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{slots=-1}' 2>&1 | filecheck %s --check-prefix=ERR-NEGATIVE
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{strategy=composed}' 2>&1 | filecheck %s --check-prefix=ERR-COMPOSED-COPY
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{strategy=direct}' 2>&1 | filecheck %s --check-prefix=ERR-DIRECT-COPY
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{strategy=copy}' 2>&1 | filecheck %s --check-prefix=ERR-COPY-REDUCE
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency chunk-bytes=12}' 2>&1 | filecheck %s --check-prefix=ERR-PACKET
// RUN: echo 'func.func @rs(%%a: memref<64xf32>, %%b: memref<16xf32>) { coll.reduce_scatter sum %%a, %%b world 4 : memref<64xf32>, memref<16xf32> func.return }' | not purlin-opt -p 'coll-expand,convert-coll-to-snac{strategy=composed}' 2>&1 | filecheck %s --check-prefix=ERR-COMPOSED-RS
// RUN: echo 'func.func @arv(%%a: memref<64xf32>, %%b: memref<64xf32>, %%n: memref<4xi64>) { coll.all_reduce_v sum %%a, %%b world 4 counts %%n : memref<64xf32>, memref<64xf32>, memref<4xi64> func.return }' | not purlin-opt -p 'coll-expand,convert-coll-to-snac{strategy=composed}' 2>&1 | filecheck %s --check-prefix=ERR-COMPOSED-DEVICE
// RUN: echo 'func.func @a2a(%%a: memref<?xf32>, %%b: memref<?xf32>, %%n: memref<2x2xi64>) { coll.all_to_all_v %%a, %%b world 2 counts %%n : memref<?xf32>, memref<?xf32>, memref<2x2xi64> func.return }' | not purlin-opt -p 'coll-expand,convert-coll-to-snac{regime=latency}' 2>&1 | filecheck %s --check-prefix=ERR-WINDOW

// Each named collective becomes one rank-generic snac.program: one
// phase (copy, or direct reduction) through a staging buffer (throughput:
// reclaim/stage/notify, then wait/consume/ack) or a packet window (latency:
// reclaim/put, then wait/consume, no ack), a finish per consumer role, and an
// odd epoch advance. all_reduce's composed strategy and the cost model's
// choices by size: see convert-coll-to-snac-all-reduce.mlir.

// ERR-REGIME:       error: convert-coll-to-snac: unknown regime 'fast', expected one of auto, latency, throughput
// ERR-REGIME-NOT:   Traceback
// ERR-STRATEGY:     error: convert-coll-to-snac: unknown strategy 'twoshot', expected one of auto, copy, direct, composed
// ERR-STRATEGY-NOT: Traceback
// ERR-ARCH:         error: convert-coll-to-snac: unknown arch 'sm_70', expected one of sm_80, sm_90, sm_100
// ERR-ARCH-NOT:     Traceback
// ERR-NEGATIVE:     error: convert-coll-to-snac: chunk-bytes, slots, blocks and sms must be non-negative
// ERR-NEGATIVE-NOT: Traceback
// ERR-COMPOSED-RS:     stdin:1:{{[0-9]+}}: error: 'coll.collective': the composed strategy needs a slice that several ranks receive; use strategy=direct
// ERR-COMPOSED-RS-NOT: Traceback
// ERR-COMPOSED-DEVICE:     stdin:1:{{[0-9]+}}: error: 'coll.collective': the composed strategy cannot take counts read on the device: their prologue builds the tables of direct phases only (include/purlin/counts.cuh), not the owners' routes; use strategy=direct, or counts-on-host=true where the host binds every call's counts
// ERR-COMPOSED-DEVICE-NOT: Traceback
// ERR-WINDOW:     stdin:1:{{[0-9]+}}: error: 'coll.collective': latency regime needs static buffer sizes to size the packet window
// ERR-WINDOW-NOT: Traceback

// -- all_gather ----------------------------------------------------------------

func.func @all_gather(%in: memref<16xf32>, %out: memref<64xf32>) {
  coll.all_gather %in, %out world 4 : memref<16xf32>, memref<64xf32>
// ERR-COMPOSED-COPY: convert-coll-to-snac.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': strategy 'composed' does not apply to a copy collective
// ERR-DIRECT-COPY:   convert-coll-to-snac.mlir:[[# @LINE - 2]]:3: error: 'coll.collective': strategy 'direct' does not apply to a copy collective
// ERR-PACKET:        convert-coll-to-snac.mlir:[[# @LINE - 3]]:3: error: 'coll.collective': packets carry 8-byte payloads; chunk-bytes 12 is not a multiple
  func.return
}

// AUTO-LABEL: func.func @all_gather
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy copy :

// LAT-LABEL: func.func @all_gather
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy : memref<16xf32>, memref<64xf32> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 16 : f32
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <packed, world 4, 16> to <scattered, world 4, 16> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @all_gather
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy : memref<16xf32>, memref<64xf32> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 8 : f32
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <packed, world 4, 16> to <scattered, world 4, 16> consume <copy> chunk 8 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// The consumer takes the groups that read staging (they come first); a local
// role of a quarter of the blocks copies the rank's own slice meanwhile.
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[STAGED:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[STAGED]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.role local blocks 16 {
// THR-NEXT:        [[FIRST:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[L:%[0-9]+]] = [[FIRST]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[LTOKEN:%[0-9]+]] = snac.wait @exchange group [[L]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[L]] of [[RANK]] half [[HALF]] after [[LTOKEN]]
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- all_reduce ----------------------------------------------------------------

func.func @all_reduce(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<64xbf16>, memref<64xbf16>
// ERR-COPY-REDUCE: convert-coll-to-snac.mlir:[[# @LINE - 1]]:3: error: 'coll.collective': strategy 'copy' does not apply to a reduction collective
  func.return
}

// AUTO-LABEL: func.func @all_reduce
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy direct :

// LAT-LABEL: func.func @all_reduce
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct : memref<64xbf16>, memref<64xbf16> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 64 : bf16
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <named, world 4, [(0, 0, 64, 0), (1, 0, 64, 0), (2, 0, 64, 0), (3, 0, 64, 0)]> to <named, world 4, [(0, 0, 64, 0), (1, 0, 64, 0), (2, 0, 64, 0), (3, 0, 64, 0)]> consume <reduce sum> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @all_reduce
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy direct : memref<64xbf16>, memref<64xbf16> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 16 : bf16
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <named, world 4, [(0, 0, 64, 0), (1, 0, 64, 0), (2, 0, 64, 0), (3, 0, 64, 0)]> to <named, world 4, [(0, 0, 64, 0), (1, 0, 64, 0), (2, 0, 64, 0), (3, 0, 64, 0)]> consume <reduce sum> chunk 16 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- reduce_scatter ------------------------------------------------------------

func.func @reduce_scatter(%in: memref<64xf16>, %out: memref<16xf16>) {
  coll.reduce_scatter max %in, %out world 4 deterministic : memref<64xf16>, memref<16xf16>
  func.return
}

// AUTO-LABEL: func.func @reduce_scatter
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy direct :

// LAT-LABEL: func.func @reduce_scatter
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct : memref<64xf16>, memref<16xf16> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 48 : f16
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <scattered, world 4, 16> to <packed, world 4, 16> consume <reduce max> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free deterministic
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @reduce_scatter
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy direct : memref<64xf16>, memref<16xf16> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 16 : f16
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <scattered, world 4, 16> to <packed, world 4, 16> consume <reduce max> chunk 16 via @exchange_buf ready @exchange_ready free @exchange_free deterministic
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- all_to_all ----------------------------------------------------------------

// A rank never sends its own slice: the window holds the other three.
func.func @all_to_all(%in: memref<64xf32>, %out: memref<64xf32>) {
  coll.all_to_all %in, %out world 4 : memref<64xf32>, memref<64xf32>
  func.return
}

// AUTO-LABEL: func.func @all_to_all
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy copy :

// LAT-LABEL: func.func @all_to_all
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy : memref<64xf32>, memref<64xf32> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 48 : f32
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <addressed, world 4, 16> to <transposed, world 4, 16> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @all_to_all
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy : memref<64xf32>, memref<64xf32> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 8 : f32
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <addressed, world 4, 16> to <transposed, world 4, 16> consume <copy> chunk 8 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[STAGED:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[STAGED]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.role local blocks 16 {
// THR-NEXT:        [[FIRST:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[L:%[0-9]+]] = [[FIRST]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[LTOKEN:%[0-9]+]] = snac.wait @exchange group [[L]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[L]] of [[RANK]] half [[HALF]] after [[LTOKEN]]
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- all_gather_v --------------------------------------------------------------

func.func @all_gather_v(%in: memref<8xbf16>, %out: memref<12xbf16>) {
  coll.all_gather_v %in, %out world 4 counts [4, 0, 8, 0] : memref<8xbf16>, memref<12xbf16>
  func.return
}

// AUTO-LABEL: func.func @all_gather_v
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy copy :

// Ranks 1 and 3 send nothing, so they do not prove that ranks 0 and 2 are done
// with their halves: the wait_free / finish handshake stays.
// LAT-LABEL: func.func @all_gather_v
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy : memref<8xbf16>, memref<12xbf16> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 8 : bf16
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <packed_v, world 4, [4, 0, 8, 0]> to <scattered_v, world 4, [4, 0, 8, 0]> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @all_gather_v
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy : memref<8xbf16>, memref<12xbf16> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 8 : bf16
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <packed_v, world 4, [4, 0, 8, 0]> to <scattered_v, world 4, [4, 0, 8, 0]> consume <copy> chunk 8 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[STAGED:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[STAGED]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.role local blocks 16 {
// THR-NEXT:        [[FIRST:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[L:%[0-9]+]] = [[FIRST]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[LTOKEN:%[0-9]+]] = snac.wait @exchange group [[L]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[L]] of [[RANK]] half [[HALF]] after [[LTOKEN]]
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- reduce_scatter_v ----------------------------------------------------------

func.func @reduce_scatter_v(%in: memref<12xbf16>, %out: memref<8xbf16>) {
  coll.reduce_scatter_v min %in, %out world 4 counts [0, 0, 8, 4] : memref<12xbf16>, memref<8xbf16>
  func.return
}

// AUTO-LABEL: func.func @reduce_scatter_v
// AUTO-NEXT:    snac.program %in, %out world 4 regime latency strategy direct :

// Ranks 0 and 1 receive nothing: the handshake stays.
// LAT-LABEL: func.func @reduce_scatter_v
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct : memref<12xbf16>, memref<8xbf16> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 12 : bf16
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <scattered_v, world 4, [0, 0, 8, 4]> to <packed_v, world 4, [0, 0, 8, 4]> consume <reduce min> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 1 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @reduce_scatter_v
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy direct : memref<12xbf16>, memref<8xbf16> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 8 : bf16
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <scattered_v, world 4, [0, 0, 8, 4]> to <packed_v, world 4, [0, 0, 8, 4]> consume <reduce min> chunk 8 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return

// -- all_to_all_v --------------------------------------------------------------

// Dynamic counts: the cost model cannot size packets, so auto stages; a forced
// packet window is bounded by the static buffers, plus a packet of padding per source.
func.func @all_to_all_v(%in: memref<64xf32>, %out: memref<64xf32>, %counts: memref<4x4xi64>) {
  coll.all_to_all_v %in, %out world 4 counts %counts : memref<64xf32>, memref<64xf32>, memref<4x4xi64>
  func.return
}

// AUTO-LABEL: func.func @all_to_all_v
// AUTO-NEXT:    snac.program %in, %out counts %counts world 4 regime throughput strategy copy :

// Dynamic counts: who sends to whom is not known here, so the handshake stays.
// LAT-LABEL: func.func @all_to_all_v
// LAT-NEXT:    snac.program %in, %out counts %counts world 4 regime latency strategy copy : memref<64xf32>, memref<64xf32>, memref<4x4xi64> {
// LAT-NEXT:      snac.buffer @exchange_buf packets halves 2 slots 4 elems 72 : f32
// LAT-NEXT:      snac.signals @exchange_ready slots 4
// LAT-NEXT:      snac.signals @exchange_free slots 4
// LAT-NEXT:      snac.phase @exchange from input <addressed_v, world 4, ?> to <transposed_v, world 4, ?> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// LAT-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// LAT-NEXT:      snac.role fused blocks 16 {
// LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// LAT-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// LAT-NEXT:          snac.put @exchange unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// LAT-NEXT:        }
// LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// LAT-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// LAT-NEXT:        }
// LAT-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// LAT-NEXT:      }
// LAT-NEXT:      snac.advance [[ADV]]
// LAT-NEXT:    }
// LAT-NEXT:    func.return

// THR-LABEL: func.func @all_to_all_v
// THR-NEXT:    snac.program %in, %out counts %counts world 4 regime throughput strategy copy : memref<64xf32>, memref<64xf32>, memref<4x4xi64> {
// THR-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 8 : f32
// THR-NEXT:      snac.signals @exchange_ready slots 4
// THR-NEXT:      snac.signals @exchange_free slots 4
// THR-NEXT:      snac.phase @exchange from input <addressed_v, world 4, ?> to <transposed_v, world 4, ?> consume <copy> chunk 8 via @exchange_buf ready @exchange_ready free @exchange_free{{$}}
// THR-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// THR-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// THR-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// THR-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// THR-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// THR-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// THR-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// THR-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// THR-NEXT:      snac.role producer blocks 64 {
// THR-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// THR-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// THR-NEXT:          snac.reclaim @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// THR-NEXT:          snac.stage @exchange unit [[U]] of [[RANK]] half [[HALF]]
// THR-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// THR-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// THR-NEXT:          snac.notify @exchange unit [[U]] of [[RANK]] value [[VALUE]] release system
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.role consumer blocks 64 {
// THR-NEXT:        [[STAGED:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[STAGED]] step [[C1]] {
// THR-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// THR-NEXT:          snac.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// THR-NEXT:        }
// THR-NEXT:        snac.finish @exchange of [[RANK]] value [[NEXT]] release system
// THR-NEXT:      }
// THR-NEXT:      snac.role local blocks 16 {
// THR-NEXT:        [[FIRST:%[0-9]+]] = snac.staged_groups @exchange of [[RANK]]
// THR-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// THR-NEXT:        scf.for [[L:%[0-9]+]] = [[FIRST]] to [[GROUPS]] step [[C1]] {
// THR-NEXT:          [[LTOKEN:%[0-9]+]] = snac.wait @exchange group [[L]] of [[RANK]] epoch [[EPOCH]] acquire system
// THR-NEXT:          snac.consume @exchange group [[L]] of [[RANK]] half [[HALF]] after [[LTOKEN]]
// THR-NEXT:        }
// THR-NEXT:      }
// THR-NEXT:      snac.advance [[ADV]]
// THR-NEXT:    }
// THR-NEXT:    func.return
