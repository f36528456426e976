#!/usr/bin/env bats
# lane: cpu (no test here starts a CUDA context)
# What each stage links and includes (CPU only, no GPU needed). The Makefile names each stage's
# libraries on one line (<stage>_LIBS): 01-03 cuBLASLt and cuBLAS (the eager ops,
# common/eager/), 06 cuDNN, 04, 05, 07 and the unit tests the harness alone (CUPTI, the CUDA
# runtime). So 01-05 and 07 build with no cuDNN installed: none of their sources includes a cuDNN
# header and none of their link lines names -lcudnn. Shared headers in common/'s sub-folders
# rebuild the stages that include them (make -W: "what if this file changed", nothing touched).

load helpers

setup_file() {
    make -s -C "$BATS_TEST_DIRNAME/.." all
}

# needed FILE: the shared libraries FILE (relative to the repository) names in its dynamic
# section (readelf -d NEEDED), one per line.
needed() {
    readelf -d "$ROOT/$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# includes FILE...: every header the files include, directly or not, as the build's compiler saw
# them: the list each object's compile writes next to it, <object>.d (-MD: system headers too;
# the Makefile), for the file's object and, where the stage has a regions build, its regions
# object too. Printed in the files' order; fails when a file's list is missing or older than the
# build's flags (setup_file's make has just brought every object up to date).
includes() {
    local f obj d rc=0
    for f in "$@"; do
        case $f in
            *.cu) obj="build/${f%.cu}.cu.o" ;;
            *) obj="build/${f%.c}.o" ;;
        esac
        for d in "$ROOT/$obj.d" "$ROOT/${obj%.cu.o}.regions.cu.o.d"; do
            case $d in *.regions.cu.o.d) [ "$obj" != "${obj%.cu.o}" ] && [ -e "${d%.d}" ] || continue ;; esac
            if [ -s "$d" ] && [ ! "$ROOT/build/flags.stamp" -nt "$d" ]; then
                cat "$d"
            else
                echo "$f: no dependency list $d from this build"
                rc=1
            fi
        done
    done
    return "$rc"
}

# ---- the binaries' NEEDED entries -------------------------------------------------------------

@test "01_naive links cuBLASLt, cuBLAS and the harness's CUPTI and runtime, not cuDNN" {
    run needed 01_naive/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcublasLt.so* ]]
    [[ "$output" == *libcublas.so* ]]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" == *libcudart.so* ]]
    [[ "$output" != *libcudnn* ]]
}

@test "02_inplace links cuBLASLt and cuBLAS, not cuDNN" {
    run needed 02_inplace/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcublasLt.so* ]]
    [[ "$output" == *libcublas.so* ]]
    [[ "$output" != *libcudnn* ]]
}

@test "03_math links cuBLASLt and cuBLAS, not cuDNN" {
    run needed 03_math/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcublasLt.so* ]]
    [[ "$output" == *libcublas.so* ]]
    [[ "$output" != *libcudnn* ]]
}

@test "04_efficient links the harness alone: no cuDNN, no cuBLAS" {
    run needed 04_efficient/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" == *libcudart.so* ]]
    [[ "$output" != *libcudnn* ]]
    [[ "$output" != *libcublas* ]]
}

@test "05_flash links the harness alone: no cuDNN, no cuBLAS" {
    run needed 05_flash/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" == *libcudart.so* ]]
    [[ "$output" != *libcudnn* ]]
    [[ "$output" != *libcublas* ]]
}

@test "06_cudnn links cuDNN, not cuBLAS" {
    run needed 06_cudnn/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcudnn.so* ]]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" != *libcublas* ]]
}

@test "07_hopper links the harness alone: no cuDNN, no cuBLAS, no libcuda (driver via the runtime)" {
    run needed 07_hopper/run
    [ "$status" -eq 0 ]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" == *libcudart.so* ]]
    [[ "$output" != *libcudnn* ]]
    [[ "$output" != *libcublas* ]]
    [[ "$output" != *libcuda.so* ]]
}

@test "the unit-test binary links the harness alone: no cuDNN, no cuBLAS" {
    run needed build/common_unit
    [ "$status" -eq 0 ]
    [[ "$output" == *libcupti.so* ]]
    [[ "$output" != *libcudnn* ]]
    [[ "$output" != *libcublas* ]]
}

# ---- the make commands ------------------------------------------------------------------------

@test "make -n 01_naive: links cuBLASLt, names no cuDNN anywhere" {
    run make -C "$ROOT" -n -B 01_naive
    [ "$status" -eq 0 ]
    [[ "$output" == *"-lcublasLt -lcublas "* ]]
    [[ "$output" == *"build/common/eager/eager_ops.cu.o"* ]]
    [[ "$output" != *-lcudnn* ]]
    [[ "$output" != *cudnn* ]]
}

@test "make -n 05_flash: no cuDNN, no cuBLAS, no eager ops" {
    run make -C "$ROOT" -n -B 05_flash
    [ "$status" -eq 0 ]
    [[ "$output" == *"-o 05_flash/run "* ]]
    [[ "$output" != *cudnn* ]]
    [[ "$output" != *-lcublas* ]]
    [[ "$output" != *eager_ops* ]]
}

@test "make -n 07_hopper: sm_90a alone, no cuDNN, no cuBLAS, no -lcuda" {
    run make -C "$ROOT" -n -B 07_hopper
    [ "$status" -eq 0 ]
    [[ "$output" == *"-gencode arch=compute_90a,code=sm_90a -c 07_hopper/hopper.cu"* ]]
    [[ "$output" != *cudnn* ]]
    [[ "$output" != *-lcublas* ]]
    [[ "$output" != *"-lcuda "* ]]
}

@test "make -n 06_cudnn: links -lcudnn" {
    run make -C "$ROOT" -n -B 06_cudnn
    [ "$status" -eq 0 ]
    [[ "$output" == *"-lcudnn "* ]]
    [[ "$output" != *-lcublas* ]]
}

# ---- headers -----------------------------------------------------------------------------------

@test "no source of 01-05, 07, the shared kernel code or the harness includes a cuDNN header" {
    run includes 0[1-5]_*/*.cu 07_*/*.cu common/eager/*.cu common/*.c
    [ "$status" -eq 0 ]
    [[ "$output" == *common/sm80/mma_sm80.cuh* ]]
    [[ "$output" == *common/eager/eager_ops.h* ]]
    [[ "$output" != *cudnn* ]]
}

@test "only the unit tests' objects have tests/unit on the include path" {
    run make -C "$ROOT" -n -B build/common/cli.o build/common/reference.o build/06_cudnn/cudnn.o
    [ "$status" -eq 0 ]
    [[ "$output" == *"-c common/cli.c -o build/common/cli.o"* ]]
    [[ "$output" == *"-c 06_cudnn/cudnn.c -o build/06_cudnn/cudnn.o"* ]]
    [[ "$output" != *tests/unit* ]]
    run make -C "$ROOT" -n -B build/tests/unit/main.o
    [ "$status" -eq 0 ]
    [[ "$output" == *"-Itests/unit"*"-c tests/unit/main.c -o build/tests/unit/main.o"* ]]
}

@test "06_cudnn's host files include cudnn.h (the control for the test above)" {
    run includes 06_cudnn/*.c
    [ "$status" -eq 0 ]
    [[ "$output" == *cudnn.h* ]]
}

@test "the lists name headers included through another header, and system headers (controls)" {
    # gcc: builder.c includes cudnn.h only through builder.h
    [ "$(grep -c 'cudnn\.h' "$ROOT/06_cudnn/builder.c")" -eq 0 ]
    run includes 06_cudnn/builder.c
    [ "$status" -eq 0 ]
    [[ "$output" == *cudnn.h* ]]
    # nvcc: efficient.cu includes mma_sm80.cuh only through attn_tiles.cuh, and <stdio.h> from the
    # system's path; both in the lists of its plain and its regions object
    [ "$(grep -c 'mma_sm80' "$ROOT/04_efficient/efficient.cu")" -eq 0 ]
    run includes 04_efficient/efficient.cu
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | tr ' ' '\n' | grep -cx 'common/sm80/mma_sm80\.cuh')" -eq 2 ]
    [ "$(printf '%s\n' "$output" | tr ' ' '\n' | grep -cx '/.*/include/stdio\.h')" -eq 2 ]
}

@test "06_cudnn has no .cu file: it is host code, C11 through gcc" {
    run bash -c "ls '$ROOT'/06_cudnn/*.cu 2>/dev/null | wc -l"
    [ "$output" -eq 0 ]
    run make -C "$ROOT" -n -B 06_cudnn
    [ "$status" -eq 0 ]
    [[ "$output" == *"-std=c11"*"-c 06_cudnn/cudnn.c -o build/06_cudnn/cudnn.o"* ]]
}

@test "a changed header in common/sm80/ rebuilds 04_efficient, 05_flash and 07_hopper" {
    run make -C "$ROOT" -n -W common/sm80/mma_sm80.cuh 04_efficient 05_flash 07_hopper
    [ "$status" -eq 0 ]
    [[ "$output" == *"-c 04_efficient/efficient.cu -o build/04_efficient/efficient.cu.o"* ]]
    [[ "$output" == *"-c 05_flash/flash.cu -o build/05_flash/flash.cu.o"* ]]
    [[ "$output" == *"-c 07_hopper/hopper.cu -o build/07_hopper/hopper.cu.o"* ]]
}

@test "a changed header in common/eager/ rebuilds the eager ops and relinks 01_naive" {
    run make -C "$ROOT" -n -W common/eager/eager_ops.h 01_naive
    [ "$status" -eq 0 ]
    [[ "$output" == *"-c common/eager/eager_ops.cu -o build/common/eager/eager_ops.cu.o"* ]]
    [[ "$output" == *"-o 01_naive/run "* ]]
}

@test "a changed header in common/sm90/ rebuilds 07_hopper" {
    run make -C "$ROOT" -n -W common/sm90/wgmma.cuh 07_hopper
    [ "$status" -eq 0 ]
    [[ "$output" == *"-c 07_hopper/hopper.cu -o build/07_hopper/hopper.cu.o"* ]]
}
