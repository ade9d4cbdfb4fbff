// RUN: not purlin-opt %s --split-input-file > %t.out 2> %t.err
// RUN: filecheck %s --check-prefix=OUT < %t.out
// RUN: filecheck %s --check-prefix=ERR < %t.err

// Every chunk is processed and every failing one reported, as mlir-opt does
// (the first failure used to stop the run); the exit status is 1.

func.func @first(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @bad_world(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 0 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @bad_syntax(%a: memref<8xf32>) {
  coll.all_reduce sum %a %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

func.func @last(%a: memref<8xf32>) {
  func.return
}

// OUT:      func.func @first
// OUT:      // -----
// OUT-NEXT: // -----
// OUT-NEXT: // -----
// OUT-NEXT: builtin.module {
// OUT-NEXT:   func.func @last

// ERR:      split-input-file.mlir:16:3: error: 'coll.all_reduce': world size must be at least 1, got 0
// ERR-NEXT: split-input-file.mlir:23:26: error: Expected ','
// ERR-NEXT: {{^}}  coll.all_reduce sum %a %a world 2
// ERR-NEXT: {{^ {25}\^$}}
// ERR-NOT:  {{.}}
