// RUN: purlin-opt - -p coll-expand < %s | filecheck %s
// RUN: purlin-opt -p coll-expand < %s | filecheck %s
// RUN: sed 's/world 2/world 0/' %s | not purlin-opt - 2>&1 | filecheck %s --check-prefix=ERR

// `-`, or no file, is standard input, as for mlir-opt (`-` used to be a
// file that does not exist); its diagnostics name it stdin.

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK: coll.collective %a, %a in #coll.layout<scattered, world 2, 4>

// ERR:     {{^}}stdin:9:3: error: 'coll.all_reduce': world size must be at least 1, got 0
// ERR-NOT: {{.}}
