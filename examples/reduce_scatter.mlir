// 4-rank reduce_scatter with max: each rank keeps the max of its quarter.
func.func @reduce_scatter(%in: memref<4096xf16>, %out: memref<1024xf16>) {
  coll.reduce_scatter max %in, %out world 4 deterministic : memref<4096xf16>, memref<1024xf16>
  func.return
}
