// 3-rank reduce_scatter_v with counts known only at run time.
func.func @reduce_scatter_v(%in: memref<?xbf16>, %out: memref<?xbf16>, %counts: memref<3xi64>) {
  coll.reduce_scatter_v sum %in, %out world 3 counts %counts : memref<?xbf16>, memref<?xbf16>, memref<3xi64>
  func.return
}
