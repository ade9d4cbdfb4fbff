// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed chunk-bytes=16 slots=2}' | filecheck %s --check-prefix=COMPOSED
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency strategy=composed}' | filecheck %s --check-prefix=COMPOSED-LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{strategy=direct}' | filecheck %s --check-prefix=DIRECT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{arch=sm_80}' | filecheck %s --check-prefix=SM80
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac' | filecheck %s --check-prefix=SM90
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{arch=sm_90}' | filecheck %s --check-prefix=SM90
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{arch=sm_100}' | filecheck %s --check-prefix=SM100

// RUN: echo 'func.func @rs(%%a: memref<1048576xf32>, %%b: memref<131072xf32>) { coll.reduce_scatter sum %%a, %%b world 8 : memref<1048576xf32>, memref<131072xf32> func.return }' | purlin-opt -p 'coll-expand,convert-coll-to-snac' | filecheck %s --check-prefix=RS
// RUN: echo 'func.func @one(%%a: memref<524288xbf16>) { coll.all_reduce sum %%a, %%a world 1 : memref<524288xbf16>, memref<524288xbf16> func.return }' | purlin-opt -p 'coll-expand,convert-coll-to-snac' | filecheck %s --check-prefix=ONE
// RUN: echo 'func.func @ag(%%a: memref<65536xf32>, %%b: memref<524288xf32>) { coll.all_gather %%a, %%b world 8 : memref<65536xf32>, memref<524288xf32> func.return }' | purlin-opt -p 'coll-expand,convert-coll-to-snac' | filecheck %s --check-prefix=AG

// all_reduce, the one collective with two strategies: direct (one phase, every
// rank reduces all peers' slices) and composed (reduce each slice to its owner,
// then the owner's reducer role forwards it to the other ranks, in one kernel).
// Forced by the options, or chosen by the cost model from size, world and arch
// (sm_90 thresholds: packets up to 64 KiB per rank, composed from 1 MiB total;
// sm_80: 32 KiB and 512 KiB; sm_100 as sm_90 with 24 blocks per role).

func.func @small(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 4 deterministic : memref<64xbf16>, memref<64xbf16>
  func.return
}

// Composed, staged: phase @reduce reads the input and reduces at each name's owner (route
// to_owner); phase @forward copies the owners' output to the other ranks (route from_owner).
// COMPOSED-LABEL: func.func @small
// COMPOSED-NEXT:    snac.program %in, %out world 4 regime throughput strategy composed : memref<64xbf16>, memref<64xbf16> {
// COMPOSED-NEXT:      snac.buffer @reduce_buf staging halves 2 slots 2 elems 8 : bf16
// COMPOSED-NEXT:      snac.signals @reduce_ready slots 4
// COMPOSED-NEXT:      snac.signals @reduce_free slots 4
// COMPOSED-NEXT:      snac.phase @reduce from input <scattered, world 4, 16> to <scattered, world 4, 16> route to_owner consume <reduce sum> chunk 8 via @reduce_buf ready @reduce_ready free @reduce_free deterministic
// COMPOSED-NEXT:      snac.buffer @forward_buf staging halves 2 slots 2 elems 8 : bf16
// COMPOSED-NEXT:      snac.signals @forward_ready slots 4
// COMPOSED-NEXT:      snac.signals @forward_free slots 4
// COMPOSED-NEXT:      snac.phase @forward from output <scattered, world 4, 16> to <scattered, world 4, 16> route from_owner consume <copy> chunk 8 via @forward_buf ready @forward_ready free @forward_free deterministic
// COMPOSED-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// COMPOSED-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// COMPOSED-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// COMPOSED-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// COMPOSED-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// The epoch advances by the larger phase's unit count, made odd.
// COMPOSED-NEXT:      [[MR:%[0-9]+]] = snac.max_units @reduce
// COMPOSED-NEXT:      [[MF:%[0-9]+]] = snac.max_units @forward
// COMPOSED-NEXT:      [[MOST:%[0-9]+]] = arith.maxui [[MR]], [[MF]] : index
// COMPOSED-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// COMPOSED-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// COMPOSED-NEXT:      snac.role producer blocks 64 {
// COMPOSED-NEXT:        [[UNITS:%[0-9]+]] = snac.units @reduce of [[RANK]]
// COMPOSED-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// COMPOSED-NEXT:          snac.reclaim @reduce unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// COMPOSED-NEXT:          snac.stage @reduce unit [[U]] of [[RANK]] half [[HALF]]
// COMPOSED-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// COMPOSED-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// COMPOSED-NEXT:          snac.notify @reduce unit [[U]] of [[RANK]] value [[VALUE]] release system
// COMPOSED-NEXT:        }
// COMPOSED-NEXT:      }
// The reducer consumes group g of @reduce and stages it as unit g of @forward
// before acknowledging the sources of @reduce.
// COMPOSED-NEXT:      snac.role reducer blocks 64 {
// COMPOSED-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @reduce of [[RANK]]
// COMPOSED-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// COMPOSED-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @reduce group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// COMPOSED-NEXT:          snac.consume @reduce group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// COMPOSED-NEXT:          snac.reclaim @forward unit [[G]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// COMPOSED-NEXT:          snac.stage @forward unit [[G]] of [[RANK]] half [[HALF]]
// COMPOSED-NEXT:          [[G1:%[0-9]+]] = arith.addi [[G]], [[C1]] : index
// COMPOSED-NEXT:          [[VALUE:%[0-9]+]] = arith.addi [[EPOCH]], [[G1]] : index
// COMPOSED-NEXT:          snac.notify @forward unit [[G]] of [[RANK]] value [[VALUE]] release system
// COMPOSED-NEXT:          snac.ack @reduce group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// COMPOSED-NEXT:        }
// COMPOSED-NEXT:        snac.finish @reduce of [[RANK]] value [[NEXT]] release system
// COMPOSED-NEXT:      }
// COMPOSED-NEXT:      snac.role consumer blocks 64 {
// COMPOSED-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @forward of [[RANK]]
// COMPOSED-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// COMPOSED-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @forward group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// COMPOSED-NEXT:          snac.consume @forward group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// COMPOSED-NEXT:          snac.ack @forward group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// COMPOSED-NEXT:        }
// COMPOSED-NEXT:        snac.finish @forward of [[RANK]] value [[NEXT]] release system
// COMPOSED-NEXT:      }
// COMPOSED-NEXT:      snac.advance [[ADV]]
// COMPOSED-NEXT:    }
// COMPOSED-NEXT:    func.return

// Composed, as packets: the reducer puts what it reduced; nothing is acknowledged.
// COMPOSED-LAT-LABEL: func.func @small
// COMPOSED-LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy composed : memref<64xbf16>, memref<64xbf16> {
// COMPOSED-LAT-NEXT:      snac.buffer @reduce_buf packets halves 2 slots 4 elems 48 : bf16
// COMPOSED-LAT-NEXT:      snac.signals @reduce_ready slots 4
// COMPOSED-LAT-NEXT:      snac.signals @reduce_free slots 4
// COMPOSED-LAT-NEXT:      snac.phase @reduce from input <scattered, world 4, 16> to <scattered, world 4, 16> route to_owner consume <reduce sum> chunk 0 via @reduce_buf ready @reduce_ready free @reduce_free deterministic
// COMPOSED-LAT-NEXT:      snac.buffer @forward_buf packets halves 2 slots 4 elems 16 : bf16
// COMPOSED-LAT-NEXT:      snac.signals @forward_ready slots 4
// COMPOSED-LAT-NEXT:      snac.signals @forward_free slots 4
// COMPOSED-LAT-NEXT:      snac.phase @forward from output <scattered, world 4, 16> to <scattered, world 4, 16> route from_owner consume <copy> chunk 0 via @forward_buf ready @forward_ready free @forward_free deterministic
// COMPOSED-LAT-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// COMPOSED-LAT-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// COMPOSED-LAT-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// COMPOSED-LAT-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// COMPOSED-LAT-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// COMPOSED-LAT-NEXT:      [[MR:%[0-9]+]] = snac.max_units @reduce
// COMPOSED-LAT-NEXT:      [[MF:%[0-9]+]] = snac.max_units @forward
// COMPOSED-LAT-NEXT:      [[MOST:%[0-9]+]] = arith.maxui [[MR]], [[MF]] : index
// COMPOSED-LAT-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// COMPOSED-LAT-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// COMPOSED-LAT-NEXT:      [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[C1]] : index
// COMPOSED-LAT-NEXT:      snac.role producer blocks 1 {
// COMPOSED-LAT-NEXT:        [[UNITS:%[0-9]+]] = snac.units @reduce of [[RANK]]
// COMPOSED-LAT-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// COMPOSED-LAT-NEXT:          snac.reclaim @reduce unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// COMPOSED-LAT-NEXT:          snac.put @reduce unit [[U]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// COMPOSED-LAT-NEXT:        }
// COMPOSED-LAT-NEXT:      }
// COMPOSED-LAT-NEXT:      snac.role reducer blocks 1 {
// COMPOSED-LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @reduce of [[RANK]]
// COMPOSED-LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// COMPOSED-LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @reduce group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// COMPOSED-LAT-NEXT:          snac.consume @reduce group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// COMPOSED-LAT-NEXT:          snac.reclaim @forward unit [[G]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// COMPOSED-LAT-NEXT:          snac.put @forward unit [[G]] of [[RANK]] half [[HALF]] flag [[FLAG]] relaxed system
// COMPOSED-LAT-NEXT:        }
// COMPOSED-LAT-NEXT:        snac.finish @reduce of [[RANK]] value [[NEXT]] release system
// COMPOSED-LAT-NEXT:      }
// COMPOSED-LAT-NEXT:      snac.role consumer blocks 1 {
// COMPOSED-LAT-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @forward of [[RANK]]
// COMPOSED-LAT-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// COMPOSED-LAT-NEXT:          [[TOKEN:%[0-9]+]] = snac.wait @forward group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// COMPOSED-LAT-NEXT:          snac.consume @forward group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]]
// COMPOSED-LAT-NEXT:        }
// COMPOSED-LAT-NEXT:        snac.finish @forward of [[RANK]] value [[NEXT]] release system
// COMPOSED-LAT-NEXT:      }
// COMPOSED-LAT-NEXT:      snac.advance [[ADV]]
// COMPOSED-LAT-NEXT:    }
// COMPOSED-LAT-NEXT:    func.return

// DIRECT-LABEL: func.func @small
// DIRECT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct :
// DIRECT:         snac.role producer blocks 64 {
// DIRECT:         snac.role consumer blocks 64 {
// DIRECT-NOT:     snac.role
// DIRECT:         snac.advance

// SM80-LABEL:  func.func @small
// SM80-NEXT:     snac.program %in, %out world 4 regime latency strategy direct :
// SM90-LABEL:  func.func @small
// SM90-NEXT:     snac.program %in, %out world 4 regime latency strategy direct :
// SM100-LABEL: func.func @small
// SM100-NEXT:    snac.program %in, %out world 4 regime latency strategy direct :
// SM100:         snac.role fused blocks 1 {

// -- the cost model's choice by size --------------------------------------------

// 64 KiB per rank: packets on sm_90 and sm_100, staged on sm_80.
func.func @kib64(%a: memref<32768xbf16>) {
  coll.all_reduce sum %a, %a world 8 : memref<32768xbf16>, memref<32768xbf16>
  func.return
}
// SM80-LABEL:  func.func @kib64
// SM80-NEXT:     snac.program %a, %a world 8 regime throughput strategy direct :
// SM80-NEXT:       snac.buffer @exchange_buf staging halves 2 slots 4 elems 32768 : bf16
// SM90-LABEL:  func.func @kib64
// SM90-NEXT:     snac.program %a, %a world 8 regime latency strategy direct :
// SM90-NEXT:       snac.buffer @exchange_buf packets halves 2 slots 8 elems 32768 : bf16
// SM100-LABEL: func.func @kib64
// SM100-NEXT:    snac.program %a, %a world 8 regime latency strategy direct :

// 128 KiB: staged everywhere, still direct; the eight scattered names travel together and coalesce
// into one, so one unit holds the whole buffer (the chunk is capped at the largest name).
func.func @kib128(%a: memref<65536xbf16>) {
  coll.all_reduce sum %a, %a world 8 : memref<65536xbf16>, memref<65536xbf16>
  func.return
}
// SM80-LABEL:  func.func @kib128
// SM80-NEXT:     snac.program %a, %a world 8 regime throughput strategy direct :
// SM80-NEXT:       snac.buffer @exchange_buf staging halves 2 slots 4 elems 65536 : bf16
// SM90-LABEL:  func.func @kib128
// SM90-NEXT:     snac.program %a, %a world 8 regime throughput strategy direct :
// SM90-NEXT:       snac.buffer @exchange_buf staging halves 2 slots 4 elems 65536 : bf16
// SM100-LABEL: func.func @kib128
// SM100-NEXT:    snac.program %a, %a world 8 regime throughput strategy direct :

// 512 KiB: direct everywhere (composed starts at 1 MiB).
func.func @kib512(%a: memref<262144xbf16>) {
  coll.all_reduce sum %a, %a world 8 : memref<262144xbf16>, memref<262144xbf16>
  func.return
}
// SM80-LABEL:  func.func @kib512
// SM80-NEXT:     snac.program %a, %a world 8 regime throughput strategy direct :
// SM90-LABEL:  func.func @kib512
// SM90-NEXT:     snac.program %a, %a world 8 regime throughput strategy direct :
// SM100-LABEL: func.func @kib512
// SM100-NEXT:    snac.program %a, %a world 8 regime throughput strategy direct :

// 1 MiB: composed everywhere, unless forced direct.
func.func @mib1(%a: memref<524288xbf16>) {
  coll.all_reduce sum %a, %a world 8 : memref<524288xbf16>, memref<524288xbf16>
  func.return
}
// SM80-LABEL:  func.func @mib1
// SM80-NEXT:     snac.program %a, %a world 8 regime throughput strategy composed :
// SM90-LABEL:  func.func @mib1
// SM90-NEXT:     snac.program %a, %a world 8 regime throughput strategy composed :
// SM90-NEXT:       snac.buffer @reduce_buf staging halves 2 slots 4 elems 65536 : bf16
// SM90:            snac.buffer @forward_buf staging halves 2 slots 4 elems 65536 : bf16
// SM90:            snac.role producer blocks 64 {
// SM90:            snac.role reducer blocks 64 {
// SM90:            snac.role consumer blocks 64 {
// SM100-LABEL: func.func @mib1
// SM100-NEXT:    snac.program %a, %a world 8 regime throughput strategy composed :
// SM100:           snac.role producer blocks 64 {
// SM100:           snac.role reducer blocks 64 {
// SM100:           snac.role consumer blocks 64 {
// DIRECT-LABEL: func.func @mib1
// DIRECT-NEXT:    snac.program %a, %a world 8 regime throughput strategy direct :
// DIRECT-NOT:     snac.phase @forward
// DIRECT:         snac.advance

// Beyond 16 ranks, even a few bytes are staged: packet fan-out costs more.
func.func @world32(%a: memref<64xbf16>) {
  coll.all_reduce sum %a, %a world 32 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// SM90-LABEL:  func.func @world32
// SM90-NEXT:     snac.program %a, %a world 32 regime throughput strategy direct :
// SM90-NEXT:       snac.buffer @exchange_buf staging halves 2 slots 4 elems 64 : bf16
// SM90-NEXT:       snac.signals @exchange_ready slots 32

// Other collectives at large sizes: a large reduce_scatter stays direct (each
// slice has one destination, nothing to forward), a world of one has no slice
// that several ranks receive, and copy collectives are always copy.
// RS:  snac.program %a, %b world 8 regime throughput strategy direct :
// ONE: snac.program %a, %a world 1 regime throughput strategy direct :
// AG:  snac.program %a, %b world 8 regime throughput strategy copy :
// AG-NEXT: snac.buffer @exchange_buf staging halves 2 slots 4 elems 65536 : f32
