#!/usr/bin/env bash
# bench/emulate_check.sh: the element-wise check (common/reference.c) against every stage's
# arithmetic emulated on the CPU (build/common_unit emulate; tests/unit/check_tests.c), at every
# shape the GPU tests and the benchmarks use, with the rows those tests check. One line per case:
# model shape rows seed ratio (worst |err| / bound) rel_l2 max_abs pass. Ends with the largest
# ratio per model. CPU only, a few minutes (the --check-rows all cases at seq 4096 dominate).
#   EMULATE_QUICK=1: skip the cases with more than 2^22 checked elements x keys.
set -euo pipefail
cd "$(dirname "$0")/.."
U=build/common_unit
[ -x "$U" ] || { echo "emulate_check: $U is not built (make build/common_unit)" >&2; exit 2; }
cases=()
for s in 1 17 255 1000; do for d in 64 128; do cases+=("1x2x${s}x${d} all 0"); done; done
cases+=("1x1x77x64 all 0" "3x5x77x64 all 0" "5x3x77x128 all 0" "1x2x17x64 all 0" "1x2x77x64 all 0"
        "1x2x77x96 all 0" "2x2x100x64 all 0" "1x2x1024x64 all 0" "1x2x1024x128 all 0" "2x4x1000x128 all 0"
        "2x2x1000x64 all 7" "2x2x1000x128 all 7")
for s in 1 17 255; do for d in 64 128; do cases+=("2x3x${s}x${d} all 0"); done; done
for s in 1 17 1000 1024; do for d in 64 128; do cases+=("2x4x${s}x${d} all 0"); done; done
for s in 1000 1024; do for d in 64 128; do cases+=("2x2x${s}x${d} all 0"); done; done
cases+=("1x1x4096x64 all 0" "1x1x4096x128 all 0")
cases+=("8x16x1024x64 256 0" "4x16x2048x64 256 0" "2x16x4096x128 256 0" "2x16x2048x64 256 0"
        "2x16x2048x128 256 0" "2x4x4096x64 256 0" "2x4x4096x128 256 0" "1x2x64x64 256 0"
        "2x4x256x64 256 0")
declare -A worst
for c in "${cases[@]}"; do
    read -r shape rows seed <<<"$c"
    IFS=x read -r b h s d <<<"$shape"
    if [ "${EMULATE_QUICK:-0}" = 1 ] && [ "$rows" = all ] && [ $((b * h * s * s * d / 2)) -gt $((1 << 22)) ]; then
        continue
    fi
    for m in eager math tiled flash cudnn; do
        line=$("$U" emulate "$m" "$shape" "$rows" "$seed" | tail -n 1)
        echo "$m $shape rows=$rows seed=$seed $line"
        r=${line#ratio=}; r=${r%% *}
        if [ -z "${worst[$m]:-}" ] || python3 -c "import sys; sys.exit(0 if $r > ${worst[$m]} else 1)"; then
            worst[$m]=$r
        fi
    done
done
for m in eager math tiled flash cudnn; do echo "worst $m ratio=${worst[$m]}"; done
