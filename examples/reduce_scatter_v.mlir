// 3-rank reduce_scatter_v with counts known only at run time.
// counts: 4, 0, 6
func.func @reduce_scatter_v(%in: memref<12xbf16>, %out: memref<6xbf16>, %counts: memref<3xi64>) {
  coll.reduce_scatter_v sum %in, %out world 3 counts %counts : memref<12xbf16>, memref<6xbf16>, memref<3xi64>
  func.return
}
