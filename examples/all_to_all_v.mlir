// 2-rank all_to_all_v: row s of the matrix is what rank s sends to each rank.
func.func @all_to_all_v(%in: memref<7xf8E4M3FN>, %out: memref<9xf8E4M3FN>) {
  coll.all_to_all_v %in, %out world 2 counts [1, 6, 0, 3] : memref<7xf8E4M3FN>, memref<9xf8E4M3FN>
  func.return
}
