// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{counts-on-host=true regime=throughput},snac-verify' | filecheck %s --check-prefix=HOST
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{counts-on-host=true regime=throughput symmetric=true ranks-per-device=3},snac-verify' | filecheck %s --check-prefix=SYM
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput symmetric=true},snac-verify' | filecheck %s --check-prefix=DEVICE
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{counts-on-host=true regime=latency},snac-verify' | filecheck %s --check-prefix=LAT

// all_reduce_v with counts given at each call. Bound on the host
// (counts-on-host), the cost model costs it at the most its buffers take, as
// a fixed all_reduce of that size: composed (reduce each rank's slice at its
// owner, then push it on) from 1 MiB, or where symmetric, in place; below,
// direct. Symmetric with every rank on one GPU (ranks-per-device 3), direct
// while the inputs together fit the L2 budget (each rank pulls every input
// whole), composed in place. Read on the device, the counts' prologue builds
// direct phases only: direct, staged. snac-verify proves each with the
// sampled counts and counts that change from call to call.
func.func @large(%a: memref<524288xbf16>, %b: memref<524288xbf16>, %n: memref<3xi64>) {
  coll.all_reduce_v sum %a, %b world 3 counts %n : memref<524288xbf16>, memref<524288xbf16>, memref<3xi64>
  func.return
}
// HOST-LABEL: func.func @large
// HOST:       snac.program %a, %b counts %n world 3 regime throughput strategy composed :
// HOST:       snac.phase @reduce from input <scattered_v, world 3, ?> to <scattered_v, world 3, ?> route to_owner consume <reduce sum> chunk {{[0-9]+}} via @reduce_buf
// HOST:       snac.phase @forward from output <scattered_v, world 3, ?> to <scattered_v, world 3, ?> route from_owner consume <copy> chunk {{[0-9]+}} via @forward_buf
// SYM-LABEL:  func.func @large
// SYM:        snac.program %a, %b counts %n world 3 regime throughput strategy direct symmetric
// SYM-NOT:    snac.buffer
// SYM:        snac.phase @exchange {{.*}} consume <reduce sum> chunk 0 direct pull
// DEVICE-LABEL: func.func @large
// DEVICE:       snac.program %a, %b counts %n world 3 regime throughput strategy direct symmetric :
// DEVICE:       snac.phase @exchange from input <scattered_v, world 3, ?> to <scattered_v, world 3, ?> consume <reduce sum> chunk {{[0-9]+}} via @exchange_buf

// In the latency regime, bound on the host, the exchange coalesces: whatever
// the counts, the slices move as one name (one unit, one group, as a fixed
// all_reduce's), and every pair exchanges each call (no handshake).
// LAT-LABEL:  func.func @large
// LAT:        snac.program %a, %b counts %n world 3 regime latency strategy direct :
// LAT:        snac.phase @exchange from input <scattered_v, world 3, ?> to <scattered_v, world 3, ?> consume <reduce sum> chunk 0 via @exchange_buf {{.*}} empty_units coalesce
// LAT-NOT:    snac.wait_free

func.func @small(%a: memref<4096xbf16>, %b: memref<4096xbf16>, %n: memref<3xi64>) {
  coll.all_reduce_v sum %a, %b world 3 counts %n : memref<4096xbf16>, memref<4096xbf16>, memref<3xi64>
  func.return
}
// HOST-LABEL: func.func @small
// HOST:       snac.program %a, %b counts %n world 3 regime throughput strategy direct :
// HOST:       snac.phase @exchange from input <scattered_v, world 3, ?> to <scattered_v, world 3, ?> consume <reduce sum> chunk 4096 via @exchange_buf
// SYM-LABEL:  func.func @small
// SYM:        snac.program %a, %b counts %n world 3 regime throughput strategy direct symmetric

// In place: input and output have one layout, so whatever the counts each
// output slice is its own name's input slice, staged before it is overwritten.
// Where symmetric it moves in place as the fixed all_reduce does: which slices
// a peer reads and another rank writes is the layouts' structure, whatever the
// counts (the owner pulls each slice, then pushes it back itself).
func.func @in_place(%a: memref<524288xbf16>, %n: memref<3xi64>) {
  coll.all_reduce_v sum %a, %a world 3 counts %n : memref<524288xbf16>, memref<524288xbf16>, memref<3xi64>
  func.return
}
// HOST-LABEL: func.func @in_place
// HOST:       snac.program %a, %a counts %n world 3 regime throughput strategy composed :
// HOST:       snac.phase @reduce {{.*}} route to_owner consume <reduce sum> chunk {{[0-9]+}} via @reduce_buf {{.*}} stage_local
// SYM-LABEL:  func.func @in_place
// SYM:        snac.program %a, %a counts %n world 3 regime throughput strategy composed symmetric
// SYM:        snac.phase @reduce from input {{.*}} route to_owner consume <reduce sum> chunk 0 direct pull
// SYM:        snac.phase @forward from output {{.*}} route from_owner consume <copy> chunk 0 direct push
// DEVICE-LABEL: func.func @in_place
// DEVICE:       snac.program %a, %a counts %n world 3 regime throughput strategy direct symmetric
// DEVICE:       snac.phase @exchange {{.*}} via @exchange_buf {{.*}} stage_local
