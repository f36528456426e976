#!/usr/bin/env bats
# GPU: the counter pass on every stage at a small shape: counters measured (dram_read numeric),
# and for every kernel the achieved occupancy (sm__warps_active) is at most the theoretical
# occupancy we compute + 1 percentage point. (The counter pass alone: --no-timeline.)
load helpers

setup() { require_gpu; }

@test "counters: every stage, every kernel: achieved <= theoretical occupancy (+1 point)" {
    for stage in 01_naive 02_inplace 03_math 04_efficient 05_flash 06_cudnn; do
        run_stage_profiled "$stage" --batch 2 --heads 4 --seq 512 --head-dim 64 --no-timeline
        echo "$stage: $(printf '%s\n' "$output" | tail -n 1)"
        [ "$status" -eq 0 ]
        [[ "$(field dram_read)" =~ ^[0-9]+$ ]]
        assert_achieved_le_theoretical
    done
}
