// RUN: not purlin-opt %s -p 'convert-coll-to-snac{regime=throughput strategy=composed chunk-bytes=4096 slots=4}' 2>&1 | filecheck %s --check-prefix=C2S
// RUN: not purlin-opt %s -p convert-snac-to-atom 2>&1 | filecheck %s --check-prefix=S2A
// RUN: not purlin-opt %s -p snac-verify 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: not purlin-opt %s -p coll-expand,convert-coll-to-snac,convert-snac-to-atom,convert-snac-to-atom 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: purlin-opt %s -p coll-expand,convert-coll-to-snac,convert-snac-to-atom,snac-verify | filecheck %s --check-prefix=OK

// A pass given none of what it takes is an error naming the passes that were
// missing, not a silent no-op (the README's own convert-coll-to-snac example
// used to return its input unchanged).

func.func @all_reduce(%in: memref<1024xbf16>, %out: memref<1024xbf16>) {
  coll.all_reduce sum %in, %out world 8 : memref<1024xbf16>, memref<1024xbf16>
  func.return
}

// C2S:     pass-does-not-apply.mlir:12:3: error: 'coll.all_reduce': pass 'convert-coll-to-snac' does not apply to it: it takes coll.collective; run coll-expand before it
// C2S-NOT: builtin.module

// S2A:     pass-does-not-apply.mlir:12:3: error: 'coll.all_reduce': pass 'convert-snac-to-atom' does not apply to it: it takes snac.program; run coll-expand,convert-coll-to-snac before it
// S2A-NOT: builtin.module

// VERIFY:     pass-does-not-apply.mlir:12:3: error: 'coll.all_reduce': pass 'snac-verify' does not apply to it: it takes snac.program or atom.kernel; run coll-expand,convert-coll-to-snac before it
// VERIFY-NOT: builtin.module

// TWICE:     pass-does-not-apply.mlir:12:3: error: 'atom.kernel': pass 'convert-snac-to-atom' does not apply to it: it takes snac.program, and this atom.kernel is lowered past that
// TWICE-NOT: builtin.module

// OK: atom.kernel
