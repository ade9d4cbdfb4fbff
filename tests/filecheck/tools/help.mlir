// RUN: purlin-opt --help | filecheck %s
// RUN: purlin-opt --version | filecheck %s --check-prefix=VERSION

// purlin's passes are listed one per line at the end of --help.
// CHECK:      purlin passes:
// CHECK:        coll-expand

// VERSION: purlin-opt (xdsl 0.74.0)
