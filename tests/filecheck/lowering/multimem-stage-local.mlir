// multimem.ld_reduce reads one symmetric address on every rank, so a phase
// reduced with it stages every contribution, the rank's own included; packet
// phases carry flags inline and never use it.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=direct},convert-snac-to-atom{arch=sm_90 multimem=true},snac-verify' | filecheck %s --check-prefix=STAGED
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90 multimem=true}' | filecheck %s --check-prefix=PACKETS

func.func @all_reduce(%in: memref<4096xbf16>, %out: memref<4096xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<4096xbf16>, memref<4096xbf16>
  func.return
}
// STAGED:       atom.kernel {{.*}} target sm_90 {{.*}} multimem
// STAGED:       snac.phase @exchange {{.*}} stage_local{{$}}
// STAGED:       atom.reduce @exchange {{.*}} mech multimem width 16{{$}}
// PACKETS:      snac.phase @exchange
// PACKETS-NOT:  stage_local
// PACKETS:      atom.reduce @exchange {{.*}} mech vector width 16{{$}}
