// RUN: not purlin-opt %s -p coll-expnad 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not purlin-opt %s -p 'coll-expand{world=4}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not purlin-opt %s -p 'coll-expand{world' 2>&1 | filecheck %s --check-prefix=SPEC

// Pipeline mistakes are one diagnostic naming the pipeline, never a traceback.

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// NAME:     error: invalid pass pipeline 'coll-expnad': Unrecognized passes: ['coll-expnad']; purlin's passes are convert-stablehlo-to-coll, convert-shard-to-coll, coll-expand
// NAME-NOT: Traceback

// OPTION:     error: invalid pass pipeline 'coll-expand{world=4}': Provided arguments ["world"] not found in expected arguments []
// OPTION-NOT: Traceback

// SPEC:      error: Error parsing pass pipeline specification:
// SPEC-NEXT: pass-pipeline:1:
// SPEC-NEXT: coll-expand{world
// SPEC-NOT:  Traceback
