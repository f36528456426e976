/* regions.cuh: region markers inside a kernel (device side of common/regions.h).
 *
 * In a kernel:
 *     attn_regions_ctx rg = attn_regions_start(p.regions, warp, lane == 0);  // unit, leader
 *     attn_region_begin(rg, ATTN_REGION_S);  ...  attn_region_end(rg, ATTN_REGION_S);
 *     attn_regions_finish(rg);                                                 // last line
 * and in the kernel's parameter struct `attn_regions_param regions;`, set on the host with
 * `fp.regions = attn_regions_param_of(p);`. One leader lane per unit (warp or warpgroup) stamps;
 * markers are called by every lane of the unit (the others do nothing).
 *
 * Only a build with -DATTN_REGIONS=1 (the Makefile's <stage>.regions.cu.o) stamps anything. In
 * the plain build attn_regions_param and attn_regions_ctx are empty structs and every marker an
 * empty inline function: the students' kernel compiles to the same SASS as without them. The
 * regions build is a second copy of the stage in the same binary: its kernels are named with
 * ATTN_REGIONS_NAME (suffix _regions), its stage object is attn_stage_regions_def (harness.h)
 * and ATTN_REGIONS_REGISTER("warp") publishes it to the harness (--regions);
 * ATTN_REGIONS_REGISTER_ROLES also names the units' roles (07: producer, consumer 0, ...).
 *
 * A stamp: %globaltimer (PTX ISA, "Special Registers: %globaltimer": a 64-bit ns clock shared
 * by the whole GPU) and %smid ("Special Registers: %smid"), read with asm volatile + a memory
 * clobber so the compiler keeps the marker between the memory operations around it. The clock is
 * read when the marker issues: asynchronous work issued before it (mma.sync, cp.async) may still
 * be in flight, so its wait shows in the region that consumes it.
 */
#ifndef ATTN_REGIONS_CUH
#define ATTN_REGIONS_CUH

#include <stdint.h>

#include "harness.h"
#include "regions.h"

#define ATTN_REGIONS_NAME(name)  ATTN_REGIONS_NAME_(name)

#if defined(ATTN_REGIONS) && ATTN_REGIONS

#define ATTN_REGIONS_NAME_(name) name##_regions

typedef attn_regions_arg attn_regions_param;

static inline attn_regions_param attn_regions_param_of(const attn_problem *p)
{
    return *p->regions;
}

/* One unit's stamping state, in registers: as few as possible (the regions build must not spill
 * where the plain kernel does not), so the block index and %smid are read again at each stamp. */
typedef struct {
    attn_regions_head *head;         /* the records follow the head (attn_regions_arg) */
    uint32_t slot;                   /* unit << 24 | the next slot (a multiple of
                                      * ATTN_REGIONS_CHUNK: claim a chunk first) */
    bool leader, stamps;             /* this lane is the unit's leader; and its SM is recorded */
} attn_regions_ctx;

static __device__ __forceinline__ uint64_t attn_globaltimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
    return t;
}

static __device__ __forceinline__ uint32_t attn_smid(void)
{
    uint32_t s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

/* Called by every lane of the unit at the kernel's start; leader: the one lane that stamps.
 * The leader of every unit, on every SM, lowers head.t_first to its start time. */
static __device__ __forceinline__ attn_regions_ctx attn_regions_start(const attn_regions_param &p,
                                                                      int unit, bool leader)
{
    attn_regions_ctx c;
    c.head = p.head;
    c.slot = ((uint32_t)unit & 0xFFu) << 24;
    c.leader = leader;
    c.stamps = leader && attn_smid() < p.sm_limit;
    if (leader) atomicMin(&p.head->t_first, (unsigned long long)attn_globaltimer());
    return c;
}

static __device__ __forceinline__ void attn_region_stamp(attn_regions_ctx &c, uint32_t tag)
{
    if (!c.stamps) return;
    const uint64_t t = attn_globaltimer();
    if ((c.slot & (ATTN_REGIONS_CHUNK - 1)) == 0) {       /* claim the next chunk of slots */
        const uint32_t first = atomicAdd(&c.head->claimed, ATTN_REGIONS_CHUNK);
        if (first + ATTN_REGIONS_CHUNK > c.head->capacity) {   /* full: no more stamps */
            c.stamps = false;
            return;
        }
        c.slot = (c.slot & 0xFF000000u) | first;
    }
    const uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const uint4 w = make_uint4((uint32_t)t, (uint32_t)(t >> 32), block,
                               (attn_smid() & 0xFFFFu) | (c.slot >> 24) << 16 | tag << 24);
    *reinterpret_cast<uint4 *>(reinterpret_cast<attn_region_rec *>(c.head + 1) +
                               (c.slot & 0xFFFFFFu)) = w;
    c.slot++;
}

static __device__ __forceinline__ void attn_region_begin(attn_regions_ctx &c, attn_region r)
{
    attn_region_stamp(c, (uint32_t)r);
}

static __device__ __forceinline__ void attn_region_end(attn_regions_ctx &c, attn_region r)
{
    attn_region_stamp(c, (uint32_t)r | ATTN_REGION_END);
}

/* Called by every lane of the unit after its last region: raises head.t_last. */
static __device__ __forceinline__ void attn_regions_finish(attn_regions_ctx &c)
{
    if (c.leader) atomicMax(&c.head->t_last, (unsigned long long)attn_globaltimer());
}

/* Publishes the stage object of this build to the harness (run.c looks for it). unit: "warp" or
 * "warpgroup", who stamps. ATTN_REGIONS_REGISTER_ROLES also names each unit index's role, in
 * order (unit 0 first), for the summary's columns and the track names:
 *     ATTN_REGIONS_REGISTER_ROLES("warpgroup", "producer", "consumer 0", "consumer 1") */
#define ATTN_REGIONS_REGISTER(unit_name) \
    extern "C" const attn_regions_build attn_regions_build_def = { &ATTN_STAGE_SYMBOL, unit_name, NULL };
#define ATTN_REGIONS_REGISTER_ROLES(unit_name, ...) \
    static const char *const attn_regions_roles_[] = { __VA_ARGS__, NULL }; \
    extern "C" const attn_regions_build attn_regions_build_def = { &ATTN_STAGE_SYMBOL, unit_name, \
                                                                   attn_regions_roles_ };

#else /* the plain build: nothing */

#define ATTN_REGIONS_NAME_(name) name

typedef struct { } attn_regions_param;
typedef struct { } attn_regions_ctx;

static inline attn_regions_param attn_regions_param_of(const attn_problem *p)
{
    (void)p;
    return attn_regions_param();
}

static __device__ __forceinline__ attn_regions_ctx attn_regions_start(const attn_regions_param &p,
                                                                      int unit, bool leader)
{
    (void)p; (void)unit; (void)leader;
    return attn_regions_ctx();
}
static __device__ __forceinline__ void attn_region_begin(attn_regions_ctx &c, attn_region r) { (void)c; (void)r; }
static __device__ __forceinline__ void attn_region_end(attn_regions_ctx &c, attn_region r) { (void)c; (void)r; }
static __device__ __forceinline__ void attn_regions_finish(attn_regions_ctx &c) { (void)c; }

#define ATTN_REGIONS_REGISTER(unit_name)
#define ATTN_REGIONS_REGISTER_ROLES(unit_name, ...)

#endif
#endif
