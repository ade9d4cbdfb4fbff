// The same collectives lowered for the three generations side by side: the
// orchestration (buffers, phases, loops, flag values) is carried over from
// snac unchanged, each protocol step becomes its atom, and only the
// mechanisms and widths differ by generation.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_80}' | filecheck %s --check-prefixes=CHECK,SM80
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_90}' | filecheck %s --check-prefixes=CHECK,SM90
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom' | filecheck %s --check-prefixes=CHECK,SM90
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_90 multimem=true}' | filecheck %s --check-prefixes=CHECK,SM90MM
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_100}' | filecheck %s --check-prefixes=CHECK,SM100
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_100 multimem=true}' | filecheck %s --check-prefixes=CHECK,SM100MM
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_100 multimem=true}' | filecheck %s --check-prefix=NOSNAC
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90}' | filecheck %s --check-prefix=NOSNAC
// The output re-parses and verifies.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=16384 slots=2 blocks=16},convert-snac-to-atom{arch=sm_100 multimem=true}' | purlin-opt | filecheck %s --check-prefixes=CHECK,SM100MM

// Below 16 KiB a unit is not worth a bulk copy: sm_90 stages with cp.async.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=4096 slots=2},convert-snac-to-atom{arch=sm_90}' | filecheck %s --check-prefix=SMALL

// Latency regime: packets (16-byte stores) on every generation.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_80}' | filecheck %s --check-prefix=LAT

// Errors: one diagnostic each, never a traceback.
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac,convert-snac-to-atom{arch=sm_70}' 2>&1 | filecheck %s --check-prefix=ERR-ARCH
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac,convert-snac-to-atom{arch=sm_80 multimem=true}' 2>&1 | filecheck %s --check-prefix=ERR-MULTIMEM

// ERR-ARCH:         error: convert-snac-to-atom: unknown arch 'sm_70', expected one of sm_80, sm_90, sm_100
// ERR-ARCH-NOT:     Traceback
// ERR-MULTIMEM:     error: convert-snac-to-atom: multimem needs sm_90 or newer, got sm_80
// ERR-MULTIMEM-NOT: Traceback

// -- all_reduce, f32 sum: 16 KiB units ------------------------------------------

func.func @all_reduce(%in: memref<8192xf32>, %out: memref<8192xf32>) {
  coll.all_reduce sum %in, %out world 2 : memref<8192xf32>, memref<8192xf32>
  func.return
}

// The whole kernel once (sm_80): roles become consecutive block ranges, a
// fence precedes every notify and finish.
// SM80-LABEL: func.func @all_reduce
// SM80-NEXT:    atom.kernel %in, %out world 2 regime throughput strategy direct target sm_80 threads 512 smem 32768 : memref<8192xf32>, memref<8192xf32> {
// SM80-NEXT:      snac.buffer @exchange_buf staging halves 2 slots 2 elems 4096 : f32
// SM80-NEXT:      snac.signals @exchange_ready slots 2
// SM80-NEXT:      snac.signals @exchange_free slots 2
// SM80-NEXT:      snac.phase @exchange from input <named, world 2, [(0, 0, 8192, 0), (1, 0, 8192, 0)]> to <named, world 2, [(0, 0, 8192, 0), (1, 0, 8192, 0)]> consume <reduce sum> chunk 4096 via @exchange_buf ready @exchange_ready free @exchange_free
// SM80-NEXT:      [[RANK:%[0-9]+]] = snac.rank
// SM80-NEXT:      [[EPOCH:%[0-9]+]], [[PREV:%[0-9]+]] = snac.epoch
// SM80-NEXT:      [[HALF:%[0-9]+]] = snac.half [[EPOCH]]
// SM80-NEXT:      [[C0:%[0-9]+]] = arith.constant 0 : index
// SM80-NEXT:      [[C1:%[0-9]+]] = arith.constant 1 : index
// SM80-NEXT:      [[MOST:%[0-9]+]] = snac.max_units @exchange
// SM80-NEXT:      [[ADV:%[0-9]+]] = arith.ori [[MOST]], [[C1]] : index
// SM80-NEXT:      [[NEXT:%[0-9]+]] = arith.addi [[EPOCH]], [[ADV]] : index
// SM80-NEXT:      atom.blocks producer first 0 blocks 16 {
// SM80-NEXT:        [[UNITS:%[0-9]+]] = snac.units @exchange of [[RANK]]
// SM80-NEXT:        scf.for [[U:%[0-9]+]] = [[C0]] to [[UNITS]] step [[C1]] {
// SM80-NEXT:          atom.wait_free @exchange unit [[U]] of [[RANK]] epoch [[EPOCH]] prev [[PREV]] acquire system
// SM80-NEXT:          atom.stage @exchange unit [[U]] of [[RANK]] half [[HALF]] mech cp_async width 16
// SM80-NEXT:          [[U1:%[0-9]+]] = arith.addi [[U]], [[C1]] : index
// SM80-NEXT:          [[FLAG:%[0-9]+]] = arith.addi [[EPOCH]], [[U1]] : index
// SM80-NEXT:          atom.fence system
// SM80-NEXT:          atom.notify @exchange unit [[U]] of [[RANK]] value [[FLAG]] release system
// SM80-NEXT:        }
// SM80-NEXT:      }
// SM80-NEXT:      atom.blocks consumer first 16 blocks 16 {
// SM80-NEXT:        [[GROUPS:%[0-9]+]] = snac.groups @exchange of [[RANK]]
// SM80-NEXT:        scf.for [[G:%[0-9]+]] = [[C0]] to [[GROUPS]] step [[C1]] {
// SM80-NEXT:          [[TOKEN:%[0-9]+]] = atom.wait_ready @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] acquire system
// SM80-NEXT:          atom.reduce @exchange group [[G]] of [[RANK]] half [[HALF]] after [[TOKEN]] mech vector width 16{{$}}
// SM80-NEXT:          atom.ack @exchange group [[G]] of [[RANK]] epoch [[EPOCH]] release system
// SM80-NEXT:        }
// SM80-NEXT:        atom.fence system
// SM80-NEXT:        atom.finish @exchange of [[RANK]] value [[NEXT]] release system
// SM80-NEXT:      }
// SM80-NEXT:      snac.advance [[ADV]]
// SM80-NEXT:    }
// SM80-NEXT:    func.return

// The other generations: only the target, the flag and the datapaths differ.
// SM90-LABEL:    func.func @all_reduce
// SM90:          atom.kernel {{.*}} target sm_90 threads 512 smem 32768 : memref<8192xf32>, memref<8192xf32> {
// SM90:          atom.stage {{.*}} mech bulk width 16{{$}}
// SM90:          atom.reduce {{.*}} mech vector width 16{{$}}

// A direct all_reduce: every rank reduces every slice, so in registers and
// in rank order even with multicast bound (the switch's order is its own).
// SM90MM-LABEL:  func.func @all_reduce
// SM90MM:        atom.kernel {{.*}} target sm_90 threads 512 smem 32768 multimem : memref<8192xf32>, memref<8192xf32> {
// SM90MM:        atom.stage {{.*}} mech bulk width 16{{$}}
// SM90MM:        atom.reduce {{.*}} mech vector width 16{{$}}

// SM100-LABEL:   func.func @all_reduce
// SM100:         atom.kernel {{.*}} target sm_100 threads 512 smem 32768 : memref<8192xf32>, memref<8192xf32> {
// SM100:         atom.stage {{.*}} mech bulk width 32{{$}}
// SM100:         atom.reduce {{.*}} mech vector width 32 packed_f32x2{{$}}

// SM100MM-LABEL: func.func @all_reduce
// SM100MM:       atom.kernel {{.*}} target sm_100 threads 512 smem 32768 multimem : memref<8192xf32>, memref<8192xf32> {
// SM100MM:       atom.stage {{.*}} mech bulk width 32{{$}}
// SM100MM:       atom.reduce {{.*}} mech vector width 32 packed_f32x2{{$}}

// SMALL-LABEL:   func.func @all_reduce
// SMALL:         atom.stage {{.*}} mech cp_async width 16{{$}}
// SMALL:         atom.reduce {{.*}} mech vector width 16{{$}}

// LAT-LABEL:     func.func @all_reduce
// LAT:           atom.kernel {{.*}} regime latency strategy direct target sm_80
// LAT:           atom.blocks fused first 0 blocks
// LAT-NOT:       atom.wait_free
// LAT:           atom.put @exchange {{.*}} mech packet width 16{{$}}
// LAT:           atom.wait_packets @exchange
// LAT-NEXT:      atom.reduce @exchange {{.*}} mech vector width 16{{$}}
// LAT-NOT:       atom.finish
// LAT:           snac.advance

// -- reduce_scatter max: what multimem.ld_reduce can do depends on the type ----
// (each slice has one destination, so the switch may reduce it; multimem
// moves 16 bytes per access and does its own arithmetic)

func.func @reduce_scatter_max_bf16(%in: memref<16384xbf16>, %out: memref<8192xbf16>) {
  coll.reduce_scatter max %in, %out world 2 : memref<16384xbf16>, memref<8192xbf16>
  func.return
}

func.func @reduce_scatter_max_f32(%in: memref<16384xf32>, %out: memref<8192xf32>) {
  coll.reduce_scatter max %in, %out world 2 : memref<16384xf32>, memref<8192xf32>
  func.return
}

func.func @reduce_scatter_prod_bf16(%in: memref<16384xbf16>, %out: memref<8192xbf16>) {
  coll.reduce_scatter prod %in, %out world 2 : memref<16384xbf16>, memref<8192xbf16>
  func.return
}

func.func @reduce_scatter_fp8(%in: memref<16384xf8E4M3FN>, %out: memref<8192xf8E4M3FN>) {
  coll.reduce_scatter sum %in, %out world 2 : memref<16384xf8E4M3FN>, memref<8192xf8E4M3FN>
  func.return
}

// SM80-LABEL:   func.func @reduce_scatter_max_bf16
// SM80:         atom.reduce {{.*}} mech vector width 16{{$}}
// SM80-LABEL:   func.func @reduce_scatter_max_f32
// SM80:         atom.reduce {{.*}} mech vector width 16{{$}}
// SM80-LABEL:   func.func @reduce_scatter_prod_bf16
// SM80:         atom.reduce {{.*}} mech vector width 16{{$}}
// SM80-LABEL:   func.func @reduce_scatter_fp8
// SM80:         atom.reduce {{.*}} mech vector width 16{{$}}

// bf16 max: multimem; f32 max, prod and fp8: the sm_80 datapath.
// SM90MM-LABEL: func.func @reduce_scatter_max_bf16
// SM90MM:       atom.reduce {{.*}} mech multimem width 16{{$}}
// SM90MM-LABEL: func.func @reduce_scatter_max_f32
// SM90MM:       atom.reduce {{.*}} mech vector width 16{{$}}
// SM90MM-LABEL: func.func @reduce_scatter_prod_bf16
// SM90MM:       atom.reduce {{.*}} mech vector width 16{{$}}
// SM90MM-LABEL: func.func @reduce_scatter_fp8
// SM90MM:       atom.reduce {{.*}} mech vector width 16{{$}}

// SM100MM-LABEL: func.func @reduce_scatter_max_bf16
// SM100MM:       atom.reduce {{.*}} mech multimem width 16{{$}}
// SM100MM-LABEL: func.func @reduce_scatter_max_f32
// SM100MM:       atom.reduce {{.*}} mech vector width 32 packed_f32x2{{$}}
// SM100MM-LABEL: func.func @reduce_scatter_prod_bf16
// SM100MM:       atom.reduce {{.*}} mech vector width 32 packed_f32x2{{$}}
// SM100MM-LABEL: func.func @reduce_scatter_fp8
// SM100MM:       atom.reduce {{.*}} mech vector width 32 packed_f32x2{{$}}

// -- all_gather: a copy collective ----------------------------------------------

func.func @all_gather(%in: memref<8192xf32>, %out: memref<16384xf32>) {
  coll.all_gather %in, %out world 2 : memref<8192xf32>, memref<16384xf32>
  func.return
}

// SM80-LABEL:   func.func @all_gather
// SM80:         atom.kernel {{.*}} strategy copy target sm_80
// SM80:         atom.stage {{.*}} mech cp_async width 16{{$}}
// SM80:         atom.copy {{.*}} mech vector width 16{{$}}

// SM90-LABEL:   func.func @all_gather
// SM90:         atom.stage {{.*}} mech bulk width 16{{$}}
// SM90:         atom.copy {{.*}} mech vector width 16{{$}}

// Multicast objects change nothing for a copy.
// SM90MM-LABEL: func.func @all_gather
// SM90MM:       atom.kernel {{.*}} multimem :
// SM90MM:       atom.stage {{.*}} mech bulk width 16{{$}}
// SM90MM:       atom.copy {{.*}} mech vector width 16{{$}}

// SM100-LABEL:  func.func @all_gather
// SM100:        atom.stage {{.*}} mech bulk width 32{{$}}
// SM100:        atom.copy {{.*}} mech vector width 32{{$}}

// SMALL-LABEL:  func.func @all_gather
// SMALL:        atom.stage {{.*}} mech cp_async width 16{{$}}
// SMALL:        atom.copy {{.*}} mech vector width 16{{$}}

// LAT-LABEL:    func.func @all_gather
// LAT:          atom.put @exchange {{.*}} mech packet width 16{{$}}
// LAT:          atom.wait_packets @exchange
// LAT-NEXT:     atom.copy @exchange {{.*}} mech vector width 16{{$}}

// No protocol step is left as a snac op.
// NOSNAC-NOT: snac.{{(role|stage|put|consume|notify|wait|ack|finish|reclaim) }}
