// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},snac-verify' | filecheck %s --check-prefix=LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed chunk-bytes=16 slots=2},snac-verify' | filecheck %s --check-prefix=COMPOSED

// In place (the input and output are one value): every phase that reads the
// input stages the rank's own contribution too (stage_local), so that a slice
// is overwritten only after the rank pushed or staged it; snac-verify proves
// the program either way.

func.func @all_reduce(%x: memref<64xf32>) {
  coll.all_reduce sum %x, %x world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// LAT:      snac.program %x, %x world 4 regime latency strategy direct
// LAT:      snac.phase @exchange from input {{.*}} stage_local{{$}}
// LAT:      snac.role fused

// Composed: the reduce phase reads the input and stages locally; the forward
// phase reads what the owner reduced into the output, after every rank's
// contribution to that slice arrived.
// COMPOSED: snac.phase @reduce from input {{.*}} route to_owner {{.*}} stage_local{{$}}
// COMPOSED: snac.phase @forward from output {{.*}} route from_owner {{.*}}@forward_free{{$}}
