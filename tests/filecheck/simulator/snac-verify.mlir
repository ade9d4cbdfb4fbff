// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},snac-verify' | filecheck %s --check-prefix=LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput},snac-verify' | filecheck %s --check-prefix=THR
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=8 slots=1},snac-verify' | filecheck %s --check-prefix=THR
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=12 slots=3},snac-verify{calls=4 seeds=2}' | filecheck %s --check-prefix=THR
// RUN: echo 'func.func @ar(%%a: memref<30xf16>, %%b: memref<30xf16>) { coll.all_reduce max %%a, %%b world 3 : memref<30xf16>, memref<30xf16> func.return }' | purlin-opt -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed chunk-bytes=8 slots=2},snac-verify' | filecheck %s --check-prefix=COMPOSED
// RUN: echo 'func.func @ar(%%a: memref<30xf16>, %%b: memref<30xf16>) { coll.all_reduce max %%a, %%b world 3 : memref<30xf16>, memref<30xf16> func.return }' | purlin-opt -p 'coll-expand,convert-coll-to-snac{regime=latency strategy=composed},snac-verify' | filecheck %s --check-prefix=COMPOSED-LAT

// The lowering's programs pass snac-verify (every wait has its notify, nothing
// is consumed before its wait, no half is overwritten while read, epochs agree,
// no deadlock) for every collective in both regimes, with one slot and with
// chunks that do not divide the slices; the pass leaves the program unchanged.

func.func @all_gather(%in: memref<16xf32>, %out: memref<64xf32>) {
  coll.all_gather %in, %out world 4 : memref<16xf32>, memref<64xf32>
  func.return
}
// LAT-LABEL: func.func @all_gather
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy
// THR-LABEL: func.func @all_gather
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy

func.func @all_reduce(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// LAT-LABEL: func.func @all_reduce
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct
// THR-LABEL: func.func @all_reduce
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy direct

func.func @reduce_scatter(%in: memref<30xf16>, %out: memref<10xf16>) {
  coll.reduce_scatter max %in, %out world 3 deterministic : memref<30xf16>, memref<10xf16>
  func.return
}
// LAT-LABEL: func.func @reduce_scatter
// LAT-NEXT:    snac.program %in, %out world 3 regime latency strategy direct
// THR-LABEL: func.func @reduce_scatter
// THR-NEXT:    snac.program %in, %out world 3 regime throughput strategy direct

func.func @all_to_all(%in: memref<64xf32>, %out: memref<64xf32>) {
  coll.all_to_all %in, %out world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// LAT-LABEL: func.func @all_to_all
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy
// THR-LABEL: func.func @all_to_all
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy

func.func @all_gather_v(%in: memref<8xbf16>, %out: memref<12xbf16>) {
  coll.all_gather_v %in, %out world 4 counts [4, 0, 8, 0] : memref<8xbf16>, memref<12xbf16>
  func.return
}
// LAT-LABEL: func.func @all_gather_v
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy copy
// THR-LABEL: func.func @all_gather_v
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy copy

func.func @reduce_scatter_v(%in: memref<12xbf16>, %out: memref<8xbf16>) {
  coll.reduce_scatter_v min %in, %out world 4 counts [0, 0, 8, 4] : memref<12xbf16>, memref<8xbf16>
  func.return
}
// LAT-LABEL: func.func @reduce_scatter_v
// LAT-NEXT:    snac.program %in, %out world 4 regime latency strategy direct
// THR-LABEL: func.func @reduce_scatter_v
// THR-NEXT:    snac.program %in, %out world 4 regime throughput strategy direct

// Dynamic counts: snac-verify samples count matrices.
func.func @all_to_all_v(%in: memref<64xf32>, %out: memref<64xf32>, %counts: memref<4x4xi64>) {
  coll.all_to_all_v %in, %out world 4 counts %counts : memref<64xf32>, memref<64xf32>, memref<4x4xi64>
  func.return
}
// LAT-LABEL: func.func @all_to_all_v
// LAT-NEXT:    snac.program %in, %out counts %counts world 4 regime latency strategy copy
// LAT:         snac.advance
// THR-LABEL: func.func @all_to_all_v
// THR-NEXT:    snac.program %in, %out counts %counts world 4 regime throughput strategy copy
// THR:         snac.advance

// COMPOSED:     snac.program %a, %b world 3 regime throughput strategy composed
// COMPOSED:       snac.role reducer blocks 64
// COMPOSED:       snac.advance
// COMPOSED-LAT: snac.program %a, %b world 3 regime latency strategy composed
// COMPOSED-LAT:   snac.role reducer blocks 1
// COMPOSED-LAT:   snac.advance
