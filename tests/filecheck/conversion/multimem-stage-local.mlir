// multimem.ld_reduce reads one symmetric address on every rank, so a phase
// reduced with it stages every contribution, the rank's own included; packet
// phases carry flags inline and never use it. The switch reduces in an order
// of its own, so it reduces only slices that one rank reduces (the others get
// that rank's bits), and never in a deterministic collective.
// RUN: sed -n '/^func.func @all_reduce/,/^}/p' %s | purlin-opt -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed},convert-snac-to-atom{arch=sm_90 multimem=true},snac-verify' | filecheck %s --check-prefix=OWNER
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=direct},convert-snac-to-atom{arch=sm_90 multimem=true},snac-verify' | filecheck %s --check-prefix=DIRECT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90 multimem=true}' | filecheck %s --check-prefix=PACKETS

func.func @all_reduce(%in: memref<4096xbf16>, %out: memref<4096xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<4096xbf16>, memref<4096xbf16>
  func.return
}

func.func @reduce_scatter(%in: memref<4096xbf16>, %out: memref<1024xbf16>) {
  coll.reduce_scatter sum %in, %out world 4 : memref<4096xbf16>, memref<1024xbf16>
  func.return
}

func.func @deterministic(%in: memref<4096xbf16>, %out: memref<1024xbf16>) {
  coll.reduce_scatter sum %in, %out world 4 deterministic : memref<4096xbf16>, memref<1024xbf16>
  func.return
}

// Composed all_reduce: the owner of each slice reduces it with the switch.
// OWNER-LABEL:  func.func @all_reduce
// OWNER:        atom.kernel {{.*}} target sm_90 {{.*}} multimem
// OWNER:        snac.phase @reduce {{.*}} stage_local{{$}}
// OWNER:        atom.reduce @reduce {{.*}} mech multimem width 16{{$}}

// Direct all_reduce: every rank reduces every slice, so in registers, in rank order.
// DIRECT-LABEL: func.func @all_reduce
// DIRECT-NOT:   stage_local
// DIRECT:       atom.reduce @exchange {{.*}} mech vector width 16{{$}}
// reduce_scatter: each slice has one destination.
// DIRECT-LABEL: func.func @reduce_scatter
// DIRECT:       snac.phase @exchange {{.*}} stage_local{{$}}
// DIRECT:       atom.reduce @exchange {{.*}} mech multimem width 16{{$}}
// DIRECT-LABEL: func.func @deterministic
// DIRECT-NOT:   stage_local
// DIRECT:       atom.reduce @exchange {{.*}} mech vector width 16{{$}}

// PACKETS:      snac.phase @exchange
// PACKETS-NOT:  stage_local
// PACKETS:      atom.reduce @exchange {{.*}} mech vector width 16{{$}}
