#!/usr/bin/env bash
# One call on the lent GPU machine (the device tool runs it in a copy of the
# checkout): install the pure-Python wheels it lacks (.whl/, from
# ../shared/tools/device-wheels pytest-xdist execnet), build purlin's runtime in place for the
# machine (skipped while that build is still there), then run what is asked.
#
#   bench/gpu_call.sh tests [PYTEST ARGS]    pytest -m gpu (default: tests/python); GPU_TESTS_SECONDS=N
#                                            skips the tests not started N seconds in, so that a run
#                                            under a time limit ends with its summary (failures named)
#   bench/gpu_call.sh bench [ONE_GPU ARGS]   bench/one_gpu.py beside its floors, built from .ref/
#                                            (../shared/reference copied there), results in $OUT
#   bench/gpu_call.sh both [ONE_GPU ARGS]    the tests, then the benchmark
#   bench/gpu_call.sh py SCRIPT [ARGS]       any other script (a probe) with the build
#   bench/gpu_call.sh torchrun [BENCH ARGS]  purlin-bench under torchrun, one process per GPU of the
#                                            machine (a machine of several GPUs), results in $OUT
#   bench/gpu_call.sh ab TREE [ONE_GPU ARGS] the benchmark on TREE (another version's files in an
#                                            ignored folder, e.g. `git archive main | tar -x -C
#                                            .ref/main-tree`, carried) and then on this checkout, one
#                                            machine, one call; results in $OUT/ab.tgz (a/ and b/:
#                                            a call returns at most 8 files). The C++ runtime is
#                                            this checkout's build for both. AB_ROUNDS=N runs
#                                            both N times, alternating which goes first (a1/
#                                            b1/ ... bN/ aN/; bench/ab_compare.py takes them).
#
# NVLink multicast stays off (the machines are shared).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/purlin-out}
mkdir -p "$OUT"

if [ ! -d /tmp/site/xdsl ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
if ! ls purlin/_runtime*.so >/dev/null 2>&1 || [ -n "$(find csrc purlin/cuda/include -newer purlin/_runtime*.so -type f | head -1)" ]; then
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
  ninja -C build/gpu >/dev/null
  cp build/gpu/csrc/_runtime*.so purlin/
fi

what=${1:-both}
shift || true
# Tests spread over PYTEST_WORKERS processes (pytest-xdist, carried in .whl/):
# they share the GPU by time slices, and their compiles run side by side.
run_tests() {
  local par=()
  python3 -c 'import xdist' 2>/dev/null && par=(-n "${PYTEST_WORKERS:-6}")
  [ -n "${GPU_TESTS_SECONDS:-}" ] && export PURLIN_TEST_DEADLINE=$(($(date +%s) + GPU_TESTS_SECONDS))
  python3 -m pytest -q -p no:cacheprovider -m gpu "${par[@]}" --durations=15 "${@:-tests/python}" 2>&1 \
    | tee "$OUT/gpu-tests.txt" | tail -40
}
# bench/one_gpu.py of the tree at $1 (its purlin first on PYTHONPATH) beside the floors.
run_bench_in() {
  local root=$1
  shift
  [ -x .ref/floor ] || nvcc -O3 -arch=sm_90 .ref/one_gpu_floor.cu -o .ref/floor
  mkdir -p "$OUT"
  PYTHONPATH=/tmp/site:$(cd "$root" && pwd) python3 "$root/bench/one_gpu.py" --floor .ref/floor \
    --least-traffic .ref/least_traffic.py --out "$OUT" "$@"
}
run_bench() { run_bench_in . "$@"; }
run_ab() {
  local tree=${1:?usage: bench/gpu_call.sh ab TREE [ONE_GPU ARGS]}
  shift
  [ -f "$tree/bench/one_gpu.py" ] || { echo "gpu_call: $tree holds no bench/one_gpu.py" >&2; exit 2; }
  cp purlin/_runtime*.so "$tree/purlin/"
  local rounds=${AB_ROUNDS:-1} status=0 r dirs=()
  [[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "gpu_call: AB_ROUNDS must be a positive count, not '$rounds'" >&2; exit 2; }
  for ((r = 1; r <= rounds; r++)); do
    # One round: a/ b/. Several: a1/ b1/, then b2/ a2/, ... (which tree runs first alternates).
    local sfx=$r order="a b"
    [ "$rounds" -eq 1 ] && sfx=
    [ $((r % 2)) -eq 0 ] && order="b a"
    for side in $order; do
      dirs+=("$side$sfx")
      if [ "$side" = a ]; then
        echo "== a$sfx: $tree"
        OUT=$OUT/a$sfx run_bench_in "$tree" "$@" || echo "gpu_call: a$sfx: bench/one_gpu.py exit status $?"
      else
        echo "== b$sfx: this checkout"
        OUT=$OUT/b$sfx run_bench_in . "$@" || status=$?
      fi
    done
  done
  tar czf "$OUT/ab.tgz" -C "$OUT" "${dirs[@]}" && (cd "$OUT" && rm -rf "${dirs[@]}")
  return "$status"
}
case "$what" in
  tests) run_tests "$@" ;;
  bench) run_bench "$@" ;;
  both) run_tests; run_bench "$@" ;;
  py) python3 "$@" ;;
  ab) run_ab "$@" ;;
  torchrun)
    gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
    [ "$gpus" -ge 2 ] || { echo "gpu_call: torchrun needs two GPUs or more, this machine has $gpus" >&2; exit 2; }
    torchrun --standalone --nproc-per-node "$gpus" -m purlin.tools.bench --out "$OUT" "$@" 2>&1 | tee "$OUT/torchrun.txt" ;;
  *) echo "usage: bench/gpu_call.sh tests|bench|both|py|ab|torchrun [ARGS]" >&2; exit 2 ;;
esac
