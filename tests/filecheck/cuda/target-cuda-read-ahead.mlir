// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90}' -t cuda | filecheck %s

// A latency kernel whose one role starts with its put loads each thread's
// first input word beside the tables (ReadAhead) and hands it to the put.
// Where a handshake comes first (a broadcast: the receivers push nothing
// back, so the put waits for a free half), nothing is read ahead: only the
// kernel's first step may take the input as the call found it.

func.func @all_gather(%in: memref<4xf32>, %out: memref<12xf32>) {
  coll.all_gather %in, %out world 3 : memref<4xf32>, memref<12xf32>
  func.return
}
// CHECK:      purlin: latency copy collective, world 3, sm_90
// CHECK:        const ReadAhead ahead(p);
// CHECK-NEXT:   K k(p, reinterpret_cast<i64*>(smem + kSmem));
// CHECK:          put_units(k, 0, {{.*}}, part, ahead);

func.func @broadcast(%in: memref<4xf32>, %out: memref<4xf32>) {
  coll.collective %in, %out in #coll.layout<named, world 3, [(0, 0, 4, 7)]> out #coll.layout<named, world 3, [(0, 0, 4, 7), (1, 0, 4, 7), (2, 0, 4, 7)]> consume #coll.consume<copy> : memref<4xf32>, memref<4xf32>
  func.return
}
// CHECK:      purlin: latency copy collective, world 3, sm_90
// CHECK-NOT:    ReadAhead
// CHECK:          wait_free<abi::Moves::Packets, true>(k, 0,
// CHECK-NEXT:     put_units(k, 0, {{.*}}, part);
