#!/usr/bin/env bash
# Compiles the CUDA backend for sm_80, sm_90 and sm_100 and checks that each
# generation's mechanisms reach its machine code (cuobjdump + nvdisasm on PATH):
# cp.async (LDGSTS) on sm_80, bulk copy (UBLKCP) and multimem (LDGMC/STGMC...) on
# sm_90 (multimem.st checked in the PTX), 32-byte accesses (.ENL2.256) and packed f32x2 (FADD2) on sm_100.
# Also links the standalone selftest (sm_90 and sm_80/100 machine code).
# Usage: csrc/cuda/check_build.sh [out_dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
python="${PYTHON:-$root/.venv/bin/python}"
gencode=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100)
includes=(-I"$root/csrc/include" -I"$root/csrc/cuda")
pyincludes=(-I"$("$python" -c 'import pybind11; print(pybind11.get_include())')" $(python3-config --includes))

for src in kernel context cuda_bindings selftest; do
  nvcc -std=c++17 "${gencode[@]}" "${includes[@]}" "${pyincludes[@]}" -Xcompiler -fPIC -c \
    "$root/csrc/cuda/$src.cu" -o "$out/$src.o"
done
g++ -std=c++17 -fPIC -I"$root/csrc/include" -c "$root/csrc/plan.cpp" -o "$out/plan.o"
nvcc "${gencode[@]}" "$out/selftest.o" "$out/context.o" "$out/kernel.o" "$out/plan.o" -o "$out/selftest"
echo "built $out/selftest"

if ! command -v cuobjdump >/dev/null; then
  echo "cuobjdump not found: machine code not inspected" >&2
  exit 1
fi
status=0
expect() {  # arch, pattern, what
  if cuobjdump -sass -arch "$1" "$out/kernel.o" | grep -qE "$2"; then
    echo "ok   $1: $3"
  else
    echo "FAIL $1: no $3 ($2)" >&2
    status=1
  fi
}
expect sm_80 'LDGSTS' "cp.async global->shared"
expect sm_90 'LDGSTS' "cp.async global->shared"
expect sm_90 'UBLKCP' "bulk copy"
expect sm_90 'SYNCS' "mbarrier"
expect sm_90 'LDGMC' "multimem.ld_reduce"
# A multimem.st is a plain strong store in SASS (the address makes it multicast): check the PTX.
nvcc -std=c++17 -arch=sm_90 "${includes[@]}" -ptx "$root/csrc/cuda/kernel.cu" -o "$out/kernel_sm90.ptx"
if grep -q 'multimem.st.relaxed.sys.global' "$out/kernel_sm90.ptx"; then
  echo "ok   sm_90: multimem.st (PTX)"
else
  echo "FAIL sm_90: no multimem.st in the PTX" >&2
  status=1
fi
expect sm_100 '\.256' "32-byte global accesses"
expect sm_100 'FADD2|FMUL2' "packed f32x2 arithmetic"
expect sm_100 'UBLKCP' "bulk copy"
exit $status
