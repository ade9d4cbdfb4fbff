// RUN: purlin-opt %s -p coll-expand | filecheck %s

func.func @all_reduce(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 8 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce
// CHECK-NEXT: coll.collective %in, %out in #coll.layout<scattered, world 8, 8> out #coll.layout<scattered, world 8, 8> consume #coll.consume<reduce sum> : memref<64xbf16>, memref<64xbf16>
