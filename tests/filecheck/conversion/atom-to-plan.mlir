// `-t plan-json` and `-t plan-hex` write the lowered plan of every atom.kernel:
// one flat instruction list per rank and role, flags relative to the epoch.
// plan-json writes one JSON document, a list of the plans.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=8 slots=2 blocks=16},convert-snac-to-atom{arch=sm_80}' -t plan-json | filecheck %s --check-prefix=THR
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90}' -t plan-json | filecheck %s --check-prefix=LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=8 slots=2 blocks=16},convert-snac-to-atom{arch=sm_80}' -t plan-hex | filecheck %s --check-prefix=HEX

// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput symmetric=true},convert-snac-to-atom' -t plan-json | filecheck %s --check-prefix=SYM
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput symmetric=true},convert-snac-to-atom' -t plan-hex | filecheck %s --check-prefix=SYM-HEX

// The JSON reads back to the same plan.
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput chunk-bytes=8 slots=2 blocks=16},convert-snac-to-atom{arch=sm_100}' -t plan-json > %t.json
// RUN: %python -c "import sys; from purlin.plan import plans_from_json, plans_to_json; print(plans_to_json(plans_from_json(sys.stdin.read())))" < %t.json > %t.again.json
// RUN: diff %t.json %t.again.json

// Errors: no kernel to write, and counts only known at run time.
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac' -t plan-json 2>&1 | filecheck %s --check-prefix=ERR-NOKERNEL
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac' -t plan-hex 2>&1 | filecheck %s --check-prefix=ERR-NOKERNEL
// RUN: echo 'func.func @agv(%%a: memref<?xf32>, %%b: memref<?xf32>, %%n: memref<2xi64>) { coll.all_gather_v %%a, %%b world 2 counts %%n : memref<?xf32>, memref<?xf32>, memref<2xi64> func.return }' | not purlin-opt -p 'coll-expand,convert-coll-to-snac{regime=throughput},convert-snac-to-atom' -t plan-json 2>&1 | filecheck %s --check-prefix=ERR-DYNAMIC

// ERR-NOKERNEL:     error: no atom.kernel to write; lower with convert-snac-to-atom first
// ERR-NOKERNEL-NOT: Traceback
// ERR-DYNAMIC:      stdin:1:{{[0-9]+}}: error: 'atom.kernel': the kernel's counts are dynamic; build its plan at run time with them
// ERR-DYNAMIC-NOT:  Traceback

func.func @all_gather(%in: memref<2xf32>, %out: memref<4xf32>) {
  coll.all_gather %in, %out world 2 : memref<2xf32>, memref<4xf32>
  func.return
}

// Throughput, one 2-element unit per rank: stage it, notify the peer, and the
// peer copies it out of the producer's staging slot and acks.
// THR:      [{"format":"purlin-plan","version":1,"arch":"sm_80","world":2,"dtype":"f32",
// THR-SAME: "input_elems":2,"output_elems":4,"advance":1,
// THR-SAME: "kernel":{"threads":512,"roles":[{"kind":"producer","blocks":16},{"kind":"consumer","blocks":16},{"kind":"local","blocks":4}]},
// THR-SAME: "buffers":[{"name":"exchange_buf","kind":"staging","slots":2,"elems":2}],
// THR-SAME: "signals":[{"name":"exchange_ready","slots":2},{"name":"exchange_free","slots":2}],
// Rank 0, producer: wait until rank 1 freed the slot in the previous call,
// stage the input, release epoch + 1 into rank 1's ready slot 0.
// THR-SAME: "ranks":{{\[\[\[}}{"op":"wait","mech":"none","sig":1,"slot":1,"base":"prev","order":"acquire"},
// THR-SAME: {"op":"copy","mech":"cp_async","elems":2,"dst":{"space":"staging","rank":0,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]},
// THR-SAME: {"op":"signal","mech":"none","peer":1,"rel":1,"order":"release"}],
// Rank 0, consumer: rank 1's slice after its flag, out of rank 1's staging;
// then ack and finish into rank 1's free slot. Local role: its own slice
// straight from the input.
// THR-SAME: [{"op":"wait","mech":"none","slot":1,"rel":1,"order":"acquire"},
// THR-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":0,"buf":0,"slot":0,"offset":2},"srcs":[{"space":"staging","rank":1,"buf":0,"slot":0,"offset":0}]},
// THR-SAME: {"op":"signal","mech":"none","sig":1,"peer":1,"rel":1,"order":"release"},
// THR-SAME: {"op":"signal","mech":"none","sig":1,"peer":1,"rel":1,"order":"release"}],
// THR-SAME: [{"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":0,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]}]],
// Rank 1 mirrors it.
// THR-SAME: {{\[\[}}{"op":"wait","mech":"none","sig":1,"base":"prev","order":"acquire"},
// THR-SAME: {"op":"copy","mech":"cp_async","elems":2,"dst":{"space":"staging","rank":1,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":1,"buf":0,"slot":0,"offset":0}]},
// THR-SAME: {"op":"signal","mech":"none","slot":1,"rel":1,"order":"release"}],
// THR-SAME: [{"op":"wait","mech":"none","rel":1,"order":"acquire"},
// THR-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":1,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"staging","rank":0,"buf":0,"slot":0,"offset":0}]},
// THR-SAME: {"op":"signal","mech":"none","sig":1,"slot":1,"rel":1,"order":"release"},
// THR-SAME: {"op":"signal","mech":"none","sig":1,"slot":1,"rel":1,"order":"release"}],
// THR-SAME: [{"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":1,"buf":0,"slot":0,"offset":2},"srcs":[{"space":"input","rank":1,"buf":0,"slot":0,"offset":0}]}]]]}]{{$}}
// THR-NOT:  {

// Latency: one fused role pushes packets into the peer's window (slot =
// source rank) and polls its own in place; no ack, and no wait_free / finish
// handshake, since each rank also receives from the peer it sends to.
// LAT:      [{"format":"purlin-plan","version":1,"arch":"sm_90","world":2,"dtype":"f32",
// LAT-SAME: "kernel":{"threads":32,"roles":[{"kind":"fused","blocks":1}]},
// LAT-SAME: "buffers":[{"name":"exchange_buf","kind":"packets","slots":2,"elems":2}],
// LAT-SAME: "ranks":{{\[\[\[}}{"op":"put","mech":"packet","elems":2,"peer":1,"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]},
// LAT-SAME: {"op":"wait_packets","mech":"packet","elems":2,"peer":1},
// LAT-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":0,"buf":0,"slot":0,"offset":2},"srcs":[{"space":"window","rank":0,"buf":0,"slot":1,"offset":0}]},
// LAT-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":0,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]}]],

// The binary words, in hex: the 16-word header (magic "PRLN", version, world, arch, dtype,
// input and output elements, advance, threads, roles, buffers, signals, 4
// reserved), then roles (kind, blocks) and buffers (kind, slots, elems).
// HEX:      000000004e4c5250
// HEX-NEXT: 0000000000000001
// HEX-NEXT: 0000000000000002
// HEX-NEXT: 0000000000000050
// HEX-NEXT: 0000000000000002
// HEX-NEXT: 0000000000000002
// HEX-NEXT: 0000000000000004
// HEX-NEXT: 0000000000000001
// HEX-NEXT: 0000000000000200
// HEX-NEXT: 0000000000000003
// HEX-NEXT: 0000000000000001
// HEX-NEXT: 0000000000000002
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000010
// HEX-NEXT: 0000000000000001
// HEX-NEXT: 0000000000000010
// HEX-NEXT: 0000000000000003
// HEX-NEXT: 0000000000000004
// HEX-NEXT: 0000000000000000
// HEX-NEXT: 0000000000000002
// HEX-NEXT: 0000000000000002
// The sentinel -1 (no destination) as an unsigned hex word.
// HEX:      ffffffffffffffff

// Symmetric: no buffers; rank 0's producer waits for rank 1's grant, then
// copies its input into its own output and into rank 1's (refs naming
// another rank's output), then notifies both; the flag says so, in JSON and
// in header word 12 of the binary form.
// SYM:      "buffers":[],
// SYM-SAME: "ranks":{{\[\[\[}}{"op":"wait","mech":"none","sig":1,"slot":1,"rel":1,"order":"acquire"},
// SYM-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":0,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]},
// SYM-SAME: {"op":"copy","mech":"vector","elems":2,"dst":{"space":"output","rank":1,"buf":0,"slot":0,"offset":0},"srcs":[{"space":"input","rank":0,"buf":0,"slot":0,"offset":0}]},
// SYM:      "symmetric":true}]{{$}}
// SYM-HEX:      000000004e4c5250
// SYM-HEX-NEXT: 0000000000000001
// SYM-HEX-NEXT: 0000000000000002
// SYM-HEX-NEXT: 000000000000005a
// SYM-HEX-NEXT: 0000000000000002
// SYM-HEX-NEXT: 0000000000000002
// SYM-HEX-NEXT: 0000000000000004
// SYM-HEX-NEXT: 0000000000000001
// SYM-HEX-NEXT: 0000000000000200
// SYM-HEX-NEXT: 0000000000000002
// SYM-HEX-NEXT: 0000000000000000
// SYM-HEX-NEXT: 0000000000000002
// SYM-HEX-NEXT: 0000000000000001
