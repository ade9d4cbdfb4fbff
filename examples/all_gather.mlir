// 4-rank all_gather: every rank contributes 256 f32 and receives all 1024.
func.func @all_gather(%in: memref<256xf32>, %out: memref<1024xf32>) {
  coll.all_gather %in, %out world 4 : memref<256xf32>, memref<1024xf32>
  func.return
}
