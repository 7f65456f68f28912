/* SPDX-License-Identifier: MIT */
/* The full register state and errno survive preemption and migration.
 *
 * Threads on two vprocs fill every vector register (ymm0-15 with AVX, else
 * xmm0-15), the callee-saved general registers and MXCSR with their own
 * patterns, then spin in a loop that touches none of them for several time
 * slices, and check them afterwards; errno is set before and checked after.
 * Between rounds they sleep briefly, so that vprocs go idle and steal: a
 * thread preempted in the middle of its loop then resumes on the other vproc
 * (seen as a different vproc before and after the loop). The test runs until
 * it has seen such migrations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito.h>

#include "common.h"

#define NTHREADS 3
#define WANT_MIGRATIONS 3

struct state {
    uint8_t vec[16][32];
    uint64_t gpr[5];   /* rbx, r12, r13, r14, r15 */
    uint32_t mxcsr;
};

static bool have_avx;
static uint64_t iters_per_ms;
static _Atomic int migrations, rounds_done;
static _Atomic bool stop;

/* Load `in`, spin `n` times touching nothing, store into `out`. */
static void spin_with(const struct state *in, struct state *out, uint64_t n)
{
    uint32_t saved_mxcsr;
    __asm__ volatile("stmxcsr %0" : "=m"(saved_mxcsr));
    if (have_avx) {
        __asm__ volatile(
            "vmovdqu 0(%[i]), %%ymm0\n\t vmovdqu 32(%[i]), %%ymm1\n\t"
            "vmovdqu 64(%[i]), %%ymm2\n\t vmovdqu 96(%[i]), %%ymm3\n\t"
            "vmovdqu 128(%[i]), %%ymm4\n\t vmovdqu 160(%[i]), %%ymm5\n\t"
            "vmovdqu 192(%[i]), %%ymm6\n\t vmovdqu 224(%[i]), %%ymm7\n\t"
            "vmovdqu 256(%[i]), %%ymm8\n\t vmovdqu 288(%[i]), %%ymm9\n\t"
            "vmovdqu 320(%[i]), %%ymm10\n\t vmovdqu 352(%[i]), %%ymm11\n\t"
            "vmovdqu 384(%[i]), %%ymm12\n\t vmovdqu 416(%[i]), %%ymm13\n\t"
            "vmovdqu 448(%[i]), %%ymm14\n\t vmovdqu 480(%[i]), %%ymm15\n\t"
            "movq 512(%[i]), %%rbx\n\t movq 520(%[i]), %%r12\n\t movq 528(%[i]), %%r13\n\t"
            "movq 536(%[i]), %%r14\n\t movq 544(%[i]), %%r15\n\t ldmxcsr 552(%[i])\n\t"
            "1: dec %[n]\n\t jnz 1b\n\t"
            "vmovdqu %%ymm0, 0(%[o])\n\t vmovdqu %%ymm1, 32(%[o])\n\t"
            "vmovdqu %%ymm2, 64(%[o])\n\t vmovdqu %%ymm3, 96(%[o])\n\t"
            "vmovdqu %%ymm4, 128(%[o])\n\t vmovdqu %%ymm5, 160(%[o])\n\t"
            "vmovdqu %%ymm6, 192(%[o])\n\t vmovdqu %%ymm7, 224(%[o])\n\t"
            "vmovdqu %%ymm8, 256(%[o])\n\t vmovdqu %%ymm9, 288(%[o])\n\t"
            "vmovdqu %%ymm10, 320(%[o])\n\t vmovdqu %%ymm11, 352(%[o])\n\t"
            "vmovdqu %%ymm12, 384(%[o])\n\t vmovdqu %%ymm13, 416(%[o])\n\t"
            "vmovdqu %%ymm14, 448(%[o])\n\t vmovdqu %%ymm15, 480(%[o])\n\t"
            "movq %%rbx, 512(%[o])\n\t movq %%r12, 520(%[o])\n\t movq %%r13, 528(%[o])\n\t"
            "movq %%r14, 536(%[o])\n\t movq %%r15, 544(%[o])\n\t stmxcsr 552(%[o])\n\t"
            "vzeroupper"
            : [n] "+c"(n)
            : [i] "r"(in), [o] "r"(out)
            : "memory", "cc", "rbx", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3",
              "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
              "xmm14", "xmm15");
    } else {
        __asm__ volatile(
            "movdqu 0(%[i]), %%xmm0\n\t movdqu 32(%[i]), %%xmm1\n\t"
            "movdqu 64(%[i]), %%xmm2\n\t movdqu 96(%[i]), %%xmm3\n\t"
            "movdqu 128(%[i]), %%xmm4\n\t movdqu 160(%[i]), %%xmm5\n\t"
            "movdqu 192(%[i]), %%xmm6\n\t movdqu 224(%[i]), %%xmm7\n\t"
            "movdqu 256(%[i]), %%xmm8\n\t movdqu 288(%[i]), %%xmm9\n\t"
            "movdqu 320(%[i]), %%xmm10\n\t movdqu 352(%[i]), %%xmm11\n\t"
            "movdqu 384(%[i]), %%xmm12\n\t movdqu 416(%[i]), %%xmm13\n\t"
            "movdqu 448(%[i]), %%xmm14\n\t movdqu 480(%[i]), %%xmm15\n\t"
            "movq 512(%[i]), %%rbx\n\t movq 520(%[i]), %%r12\n\t movq 528(%[i]), %%r13\n\t"
            "movq 536(%[i]), %%r14\n\t movq 544(%[i]), %%r15\n\t ldmxcsr 552(%[i])\n\t"
            "1: dec %[n]\n\t jnz 1b\n\t"
            "movdqu %%xmm0, 0(%[o])\n\t movdqu %%xmm1, 32(%[o])\n\t"
            "movdqu %%xmm2, 64(%[o])\n\t movdqu %%xmm3, 96(%[o])\n\t"
            "movdqu %%xmm4, 128(%[o])\n\t movdqu %%xmm5, 160(%[o])\n\t"
            "movdqu %%xmm6, 192(%[o])\n\t movdqu %%xmm7, 224(%[o])\n\t"
            "movdqu %%xmm8, 256(%[o])\n\t movdqu %%xmm9, 288(%[o])\n\t"
            "movdqu %%xmm10, 320(%[o])\n\t movdqu %%xmm11, 352(%[o])\n\t"
            "movdqu %%xmm12, 384(%[o])\n\t movdqu %%xmm13, 416(%[o])\n\t"
            "movdqu %%xmm14, 448(%[o])\n\t movdqu %%xmm15, 480(%[o])\n\t"
            "movq %%rbx, 512(%[o])\n\t movq %%r12, 520(%[o])\n\t movq %%r13, 528(%[o])\n\t"
            "movq %%r14, 536(%[o])\n\t movq %%r15, 544(%[o])\n\t stmxcsr 552(%[o])"
            : [n] "+c"(n)
            : [i] "r"(in), [o] "r"(out)
            : "memory", "cc", "rbx", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "xmm2", "xmm3",
              "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
              "xmm14", "xmm15");
    }
    __asm__ volatile("ldmxcsr %0" ::"m"(saved_mxcsr));
}

_Static_assert(offsetof(struct state, gpr) == 512 && offsetof(struct state, mxcsr) == 552,
               "the assembly's offsets");

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    for (int round = 0; !atomic_load(&stop); round++) {
        struct state in, out;
        for (int r = 0; r < 16; r++)
            for (int b = 0; b < 32; b++)
                in.vec[r][b] = (uint8_t)test_rand(&seed);
        if (!have_avx)
            for (int r = 0; r < 16; r++)
                memset(in.vec[r] + 16, 0, 16);
        for (int g = 0; g < 5; g++)
            in.gpr[g] = test_rand(&seed);
        /* Round toward zero, flush to zero, all exceptions masked. */
        in.mxcsr = 0x1f80 | 0x6000 | 0x8000;
        memset(&out, 0, sizeof out);
        int e = 1000 + id * 100 + round % 100;
        test_set_errno(e);
        int before = ito_vproc_self();
        spin_with(&in, &out, iters_per_ms * 40);   /* two to four slices */
        int after = ito_vproc_self();
        CHECK_EQ(test_errno(), e);
        for (int r = 0; r < 16; r++)
            if (memcmp(in.vec[r], out.vec[r], have_avx ? 32 : 16)) {
                fprintf(stderr, "thread %d: vector register %d changed across a preemption\n", id, r);
                abort();
            }
        for (int g = 0; g < 5; g++)
            CHECK_EQ(out.gpr[g], in.gpr[g]);
        CHECK_EQ(out.mxcsr & 0xffbf, in.mxcsr & 0xffbf);   /* bit 6 (DAZ) may be unsupported */
        if (before != after)
            atomic_fetch_add(&migrations, 1);
        atomic_fetch_add(&rounds_done, 1);
        ito_sleep_ns(200000);   /* let the vprocs go idle and steal */
    }
    return NULL;
}

int main(void)
{
    __builtin_cpu_init();
    have_avx = __builtin_cpu_supports("avx");
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 2;   /* two vprocs even on one CPU: migration needs two */
    OK(ito_init(&cfg));

    /* Calibrate the loop: iterations per millisecond. */
    struct state probe, sink;
    memset(&probe, 0, sizeof probe);
    probe.mxcsr = 0x1f80;
    uint64_t t0 = ito_now_ns();
    spin_with(&probe, &sink, 20000000);
    uint64_t ns = ito_now_ns() - t0;
    iters_per_ms = 20000000ull * 1000000u / (ns ? ns : 1);

    ito_thread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        OK(ito_spawn(&t[i], NULL, worker, (void *)(intptr_t)i));
    uint64_t end = ito_now_ns() + 60ull * 1000000000u;
    while (atomic_load(&migrations) < WANT_MIGRATIONS && ito_now_ns() < end)
        ito_sleep_ns(10000000);
    atomic_store(&stop, true);
    for (int i = 0; i < NTHREADS; i++)
        OK(ito_join(t[i], NULL));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("preempt_regs: %s, %d rounds, %d migrated in the middle of their loop, %llu preemptions\n",
           have_avx ? "ymm0-15" : "xmm0-15", atomic_load(&rounds_done), atomic_load(&migrations),
           (unsigned long long)st.preemptions);
    CHECK(st.preemptions > 0);
    CHECK(atomic_load(&migrations) >= WANT_MIGRATIONS);
    return 0;
}
