# attention-profiling: one target per stage (make 05_flash builds ./05_flash/run), all, test,
# sanitize, compare, clean. CUDA under CUDA_HOME; cuDNN (06_cudnn only) under CUDNN_HOME or the
# system paths.
CUDA_HOME  ?= /usr/local/cuda
CUDNN_HOME ?=
NVCC       := $(CUDA_HOME)/bin/nvcc
CC         ?= gcc
BUILD      := build

# Architecture: the GPU present (nvidia-smi's compute capability, used only if it is a plain
# number >= 80: the stages need sm_80+), else sm_80 and sm_90. PTX of the highest architecture is
# embedded too, so a newer GPU can JIT-compile it.
GPU_CC := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '.[:space:]' | grep -xE '[0-9]+' | awk '$$1 >= 80')
ifneq ($(GPU_CC),)
ARCH := -gencode arch=compute_$(GPU_CC),code=sm_$(GPU_CC) -gencode arch=compute_$(GPU_CC),code=compute_$(GPU_CC)
else
ARCH := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
        -gencode arch=compute_90,code=compute_90
endif

INC  := -I$(CUDA_HOME)/include -I$(CUDA_HOME)/extras/CUPTI/include -Icommon
LIBDIRS := $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib $(CUDA_HOME)/extras/CUPTI/lib64)
LDFLAGS := $(addprefix -L,$(LIBDIRS)) $(addprefix -Xlinker -rpath=,$(LIBDIRS))
# The harness (common/*.c): CUPTI, the CUDA runtime, libpthread, libdl, libm. Every stage and the
# unit tests link it; a stage adds its own libraries below (<stage>_LIBS).
HARNESS_LIBS := -lcupti -lcudart -lpthread -ldl -lm

# cuDNN, for 06_cudnn alone: its headers and library under CUDNN_HOME if set, else wherever the
# compiler and linker find them (the system paths, or CUDA_HOME where cuDNN is installed there).
CUDNN_INC     := $(if $(CUDNN_HOME),-I$(CUDNN_HOME)/include)
CUDNN_LIBDIRS := $(if $(CUDNN_HOME),$(wildcard $(CUDNN_HOME)/lib $(CUDNN_HOME)/lib64))
CUDNN_LDFLAGS := $(addprefix -L,$(CUDNN_LIBDIRS)) $(addprefix -Xlinker -rpath=,$(CUDNN_LIBDIRS))

WERROR  := $(if $(filter true,$(CI)),-Werror,)
CFLAGS  := -std=c11 -pthread -Icommon/c_shim -O2 -Wall -Wextra $(WERROR) -D_POSIX_C_SOURCE=200809L $(INC)
# -Xptxas -warn-spills: ptxas warns when a kernel spills registers to local memory; under CI
# (CI=true) -Xptxas -Werror makes that warning an error, so a kernel that spills fails the build.
NVFLAGS := -O3 -std=c++17 $(ARCH) -lineinfo -Xcompiler -Wall,-Wextra $(if $(WERROR),-Xcompiler -Werror,) \
           -Xptxas -warn-spills $(if $(WERROR),-Xptxas -Werror,) $(INC)
# 07_hopper's objects: sm_90a alone, and ptxas's report (both below).
07_hopper_ARCH    := -gencode arch=compute_90a,code=sm_90a
07_hopper_NVFLAGS := $(filter-out $(ARCH),$(NVFLAGS)) -Xptxas -v $(07_hopper_ARCH)
# Every compile also writes the list of every file the object includes, system headers too, to
# <object>.d (-MD; tests/build.bats reads them: which stage includes a cuDNN header).
DEPFILE := -MD -MF

STAGES := $(sort $(patsubst %/,%,$(wildcard 0[1-9]_*/)))

# common/ holds the harness (common/*.c, *.h) and, in sub-folders, kernel code that stages share:
# common/eager/ (the eager ops of 01-03), common/sm80/ (cp.async, ldmatrix and mma.sync wrappers
# of 04, 05, 07; the online softmax of 01-03), common/sm90/ (TMA, mbarrier, wgmma, setmaxnreg: 07).
COMMON_C   := $(filter-out common/run.c,$(wildcard common/*.c))
COMMON_OBJ := $(COMMON_C:%.c=$(BUILD)/%.o)
RUN_OBJ    := $(BUILD)/common/run.o
UNIT       := $(BUILD)/common_unit
FLASH3_ORDER := $(BUILD)/flash3_order
EAGER_OBJ  := $(patsubst %.cu,$(BUILD)/%.cu.o,$(wildcard common/eager/*.cu)) \
              $(patsubst %.c,$(BUILD)/%.o,$(wildcard common/eager/*.c))
# The ATTN_GEMM_* parser of 01 and 02 (host C, no cuBLAS): the unit tests link it too.
EAGER_ENV_OBJ := $(BUILD)/common/eager/eager_env.o

# Each stage: the libraries it links beyond the harness's (<stage>_LIBS) and the shared objects
# it uses (<stage>_OBJS, none if not named).
01_naive_LIBS     := -lcublasLt -lcublas
01_naive_OBJS     := $(EAGER_OBJ)
02_inplace_LIBS   := -lcublasLt -lcublas
02_inplace_OBJS   := $(EAGER_OBJ)
03_math_LIBS      := -lcublasLt -lcublas
03_math_OBJS      := $(EAGER_OBJ)
04_efficient_LIBS :=
05_flash_LIBS     :=
06_cudnn_LIBS     := $(CUDNN_LDFLAGS) -lcudnn
07_hopper_LIBS    :=
# (07_hopper calls cuTensorMapEncodeTiled through the runtime's cudaGetDriverEntryPointByVersion:
# no -lcuda.)

# Headers: a change in any of them rebuilds the objects that may include it.
HEADERS    := $(wildcard common/*.h common/*/*.h tests/unit/*.h $(addsuffix /*.h,$(STAGES)))
CU_HEADERS := $(HEADERS) $(wildcard common/*.cuh common/*/*.cuh $(addsuffix /*.cuh,$(STAGES)))

.PHONY: all test sanitize compare ladder clean $(STAGES)
all: $(STAGES) $(UNIT) $(FLASH3_ORDER)

# Every object depends on the compiler flags: $(FLAGS_STAMP) holds them and is rewritten (when
# the makefile is read) only when they change: CI=true adds -Werror, another GPU changes ARCH; such
# a build recompiles everything, an unchanged one nothing (make -n and -q stay truthful).
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_LINE  := $(strip $(CC) $(CFLAGS) | $(NVCC) $(NVFLAGS) | $(07_hopper_NVFLAGS) | $(DEPFILE) | \
                       $(CUDNN_INC) $(CUDNN_LDFLAGS))
FLAGS_WRITE := mkdir -p $(BUILD) && printf '%s\n' '$(subst ','\'',$(FLAGS_LINE))' > $(FLAGS_STAMP)
ifneq ($(filter-out clean,$(or $(MAKECMDGOALS),all)),)
ifneq ($(strip $(shell cat $(FLAGS_STAMP) 2>/dev/null)),$(FLAGS_LINE))
ifneq ($(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS))),)
.PHONY: $(FLAGS_STAMP)   # make -n / -q: show the rebuild, write nothing
else
$(shell $(FLAGS_WRITE))
endif
endif
endif
$(FLAGS_STAMP):
	@$(FLAGS_WRITE)

$(BUILD)/%.o: %.c $(FLAGS_STAMP) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@ $(DEPFILE) $@.d

$(BUILD)/%.cu.o: %.cu $(FLAGS_STAMP) $(CU_HEADERS)
	@mkdir -p $(dir $@)
	$(ECHO_CU) '$(NVCC) $(NVFLAGS) -c $< -o $@'
	@$(NVCC) $(NVFLAGS) -c $< -o $@ $(DEPFILE) $@.d $(KEEP_PTXAS)

# 06_cudnn's host files (gcc) see cuDNN's headers; if the compiler cannot find cudnn.h, one line
# says so before any of them is compiled (the other stages do not need cuDNN).
$(patsubst %.c,$(BUILD)/%.o,$(wildcard 06_cudnn/*.c)): CFLAGS += $(CUDNN_INC)
$(patsubst %.c,$(BUILD)/%.o,$(wildcard 06_cudnn/*.c)): | cudnn-check
.PHONY: cudnn-check
cudnn-check:
	@printf '#include <cudnn.h>\n' | $(CC) $(CFLAGS) $(CUDNN_INC) -E -x c - -o /dev/null 2>/dev/null || \
	  { echo "06_cudnn needs cuDNN 9: cudnn.h not found; set CUDNN_HOME to its install" \
	    "directory (01-05 and 07 build without cuDNN: make 01_naive ... make 07_hopper)" >&2; exit 2; }

# 07_hopper uses sm_90a-only instructions (wgmma): its objects are built for sm_90a alone,
# whatever ARCH is (nvcc 13.0 needs the -gencode form; -arch=sm_90a also runs a plain sm_90 pass).
# With -Xptxas -v, ptxas reports each kernel's registers, spills and barriers: the report is kept
# next to the object as <object>.ptxas (tests/07_ladder.bats reads it); the terminal gets the
# compiler's other messages (warnings), and everything when it fails. Each .cu line printed is
# the compile itself; the dependency list (-MD) and the report's redirection run unprinted. Under
# make -s nothing is printed (MAKEFLAGS' first word holds the one-letter flags).
ECHO_CU = @$(if $(findstring s,$(firstword -$(MAKEFLAGS))),:,echo)
$(BUILD)/07_hopper/%.cu.o: NVFLAGS := $(07_hopper_NVFLAGS)
$(BUILD)/07_hopper/%.cu.o: KEEP_PTXAS = 2> $@.ptxas || { cat $@.ptxas >&2; exit 1; }; \
    grep -vE '^ptxas info|^ +[0-9]+ bytes stack frame' $@.ptxas >&2 || true

# Stages with a regions build (common/regions.cuh, ./NN_x/run --regions): each of their .cu
# files compiled a second time with -DATTN_REGIONS=1 into <file>.regions.cu.o, linked into the
# same ./NN_x/run next to the plain objects (its kernels and stage object have their own names).
REGIONS_STAGES := 04_efficient 05_flash 07_hopper
$(BUILD)/%.regions.cu.o: %.cu $(FLAGS_STAMP) $(CU_HEADERS)
	@mkdir -p $(dir $@)
	$(ECHO_CU) '$(NVCC) $(NVFLAGS) -DATTN_REGIONS=1 -c $< -o $@'
	@$(NVCC) $(NVFLAGS) -DATTN_REGIONS=1 -c $< -o $@ $(DEPFILE) $@.d $(KEEP_PTXAS)

# One stage = its own .cu files (nvcc) and host-only .c files (gcc), the shared objects it names
# (<stage>_OBJS), its regions build if it has one, the harness; linked with <stage>_LIBS and the harness's libraries.
define STAGE_RULES
$(1): $(1)/run
$(1)/run: $(patsubst %.cu,$(BUILD)/%.cu.o,$(wildcard $(1)/*.cu)) $(patsubst %.c,$(BUILD)/%.o,$(wildcard $(1)/*.c)) \
          $(if $(filter $(1),$(REGIONS_STAGES)),$(patsubst %.cu,$(BUILD)/%.regions.cu.o,$(wildcard $(1)/*.cu))) \
          $($(1)_OBJS) $(COMMON_OBJ) $(RUN_OBJ)
	$(NVCC) $(ARCH) -o $$@ $$^ $(LDFLAGS) -Xlinker --as-needed $($(1)_LIBS) $(HARNESS_LIBS)
endef
$(foreach s,$(STAGES),$(eval $(call STAGE_RULES,$(s))))

# CPU-only unit tests of common/ (tests/common.bats drives it): the harness and 01's and 02's
# ATTN_GEMM_* parser. Only their own objects see tests/unit/ on the include path.
$(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/*.c)): CFLAGS += -Itests/unit
$(UNIT): $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/unit/*.c)) $(COMMON_OBJ) $(EAGER_ENV_OBJ)
	$(NVCC) $(ARCH) -o $@ $^ $(LDFLAGS) -Xlinker --as-needed $(HARNESS_LIBS)

# 07_hopper's work orders checked on the CPU (tests/unit/flash3_order.cu; tests/07_ladder.bats
# runs it): host code alone, with the header the kernels use, warnings as errors.
$(FLASH3_ORDER): tests/unit/flash3_order.cu $(FLAGS_STAMP) $(CU_HEADERS)
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 $(07_hopper_ARCH) -Icommon -I07_hopper -Xcompiler -Wall,-Wextra,-Werror $< -o $@

# make test: every Bats suite (GPU suites skip without a GPU), TAP output, then one closing line
# "N passed, N failed, N skipped" (tests/tap_summary.sh); the status is bats' own. On a GPU the
# suites that use it run one after another, in one bats, beside the CPU-only ones (marked "# lane:
# cpu"); without one, several at a time (tests/run_suites.sh).
# TEST_JOBS and TEST_TIMING are checked first (tests/run_suites.sh --check), then the build.
test:
	$(call REFUSE,test,$(TEST_BAD))
	@$(MAKE) --no-print-directory all
	bash -c 'set -o pipefail; bash tests/run_suites.sh | bash tests/tap_summary.sh'

clean:
	rm -rf $(BUILD) $(addsuffix /run,$(STAGES)) traces

# GPU only. Before running anything, make compare and make sanitize check their input, then the
# device (bench/compare.py preflight: ATTN_SANITIZE, SHAPE; tests/sanitize.sh --preflight: the
# SANITIZE_* variables, SANITIZER; both then tests/need_gpu.sh): on a problem they stop with one
# line (make's "Makefile:N: *** make compare: REASON.  Stop.") and exit 2, bad input reported as
# such on a machine without a GPU too. Expanded only when one of them runs.
# SHAPE reaches the shell single-quoted (a ' inside it as '\''), never as shell code, and make's
# own $ syntax in it is not expanded ($(value)): SHAPE='1x1x1x64;echo hi' is a bad shape.
# A variable given on make's command line (make sanitize SANITIZE_TIMEOUT=0) reaches the recipe's
# environment but not $(shell)'s (GNU make 4.3): the preflights get those explicitly, quoted alike.
# unexport: make would expand a command-line SHAPE to put it in the recipes' environment, running
# any $(shell ...) in it; the scripts do not read SHAPE from the environment.
unexport SHAPE
SHAPE_ARG      = $(if $(strip $(value SHAPE)),--shape '$(subst ','\'',$(value SHAPE))')
CMDLINE_ENV    = $(foreach v,$(1),$(if $(filter command line,$(origin $(v))),$(v)='$(subst ','\'',$($(v)))'))
SANITIZE_VARS  := SANITIZER SANITIZE_SHAPES SANITIZE_TOOLS SANITIZE_STAGES SANITIZE_LOGS SANITIZER_FLAGS \
                  RACECHECK_EXCLUDE SYNCCHECK_EXCLUDE INITCHECK_EXCLUDE SANITIZE_CUDA_BARRIERS SANITIZE_TIMEOUT
COMPARE_BAD    = $(shell $(call CMDLINE_ENV,ATTN_SANITIZE) python3 bench/compare.py preflight $(SHAPE_ARG) 2>&1)
TEST_BAD       = $(shell $(call CMDLINE_ENV,TEST_JOBS TEST_TIMING) bash tests/run_suites.sh --check 2>&1)
SANITIZE_BAD   = $(shell $(call CMDLINE_ENV,$(SANITIZE_VARS)) CUDA_HOME='$(subst ','\'',$(CUDA_HOME))' \
                   bash tests/sanitize.sh --preflight 2>&1)
# $(call REFUSE,TARGET,REASON): stop with "make TARGET: REASON" when REASON is not empty. The
# reason is expanded once, as call's argument: each preflight runs once, not once per mention.
REFUSE         = $(if $(2),$(error make $(1): $(2)))

# make compare [SHAPE=BxHxSxD]: every stage at one shape (default the blog's 8x16x1024x64), one
# table "at a glance"; also traces/compare.md and traces/compare.svg (bench/compare.py). GPU only.
# The recipe is the script alone: make's status follows its exit status.
# The check comes first, then the build (make expands the whole recipe before its first line):
# a bad SHAPE on a fresh clone is reported before anything is compiled.
compare:
	$(call REFUSE,compare,$(COMPARE_BAD))
	@$(MAKE) --no-print-directory all
	python3 bench/compare.py run $(SHAPE_ARG)

# make sanitize: compute-sanitizer memcheck, racecheck, synccheck and initcheck on every stage at
# small odd shapes
# (tests/sanitize.sh; logs under build/sanitize). Fails on any reported error. GPU only.
# Checked first, then built, as make compare.
sanitize:
	$(call REFUSE,sanitize,$(SANITIZE_BAD))
	@$(MAKE) --no-print-directory all
	CUDA_HOME='$(subst ','\'',$(CUDA_HOME))' bash tests/sanitize.sh

# make ladder [SHAPE=BxHxSxD]: chapter 07's ladder, every rung of ./07_hopper/run at one shape
# (default the blog's), with the counter pass: the table on stdout and in
# 07_hopper/ladder/ladder_<shape>.md, the rungs' lines in ladder_<shape>.txt (bench/ladder.py).
# Needs a Hopper GPU. Checked first (the shape's form, then the device: compare.py preflight, as
# make compare), then built.
ladder:
	$(call REFUSE,ladder,$(COMPARE_BAD))
	@$(MAKE) --no-print-directory 07_hopper
	python3 bench/ladder.py run $(SHAPE_ARG)
