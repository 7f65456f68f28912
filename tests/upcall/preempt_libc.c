/* SPDX-License-Identifier: MIT */
/* Time slices end inside the C library's memory and string functions when
 * the program called them (upcall/preempt.c, in_leaf_call):
 *   latency    on 1 vproc, a thread that spends nearly all its time in
 *              memset, and main sleeping 1 ms 50 times: every sleep ends
 *              within a few slices (it used to wait for a tick that fell in
 *              the thread's own code: 1.5 s on average, 8 s at worst);
 *   integrity  on 2 vprocs with 1 ms slices, 4 threads copy, compare,
 *              fill and measure buffers up to 256 KiB (the large copies use
 *              non-temporal stores and vector registers) for 1.5 s of CPU
 *              time, checking every result, while slices end in those
 *              functions and the threads move between vprocs.
 * Not under the sanitizers: they replace these functions with their own
 * (then a slice that ends there waits, as in any runtime). */
#include "common.h"

#include <stdatomic.h>

static atomic_bool stop;

/* ------------------------------------------------------------ latency */

static char fill_buf[1 << 16];

static void *memset_busy(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        memset(fill_buf, atomic_load_explicit(&stop, memory_order_relaxed), sizeof fill_buf);
    return NULL;
}

static void part_latency(void)
{
    ito_thread_t b;
    OK(ito_spawn(&b, NULL, memset_busy, NULL));
    OK(ito_sleep_ns(20000000));
    uint64_t worst = 0;
    for (int i = 0; i < 50; i++) {
        uint64_t t0 = ito_now_ns();
        OK(ito_sleep_ns(1000000));
        uint64_t late = ito_now_ns() - t0 - 1000000;
        worst = late > worst ? late : worst;
    }
    atomic_store(&stop, true);
    OK(ito_join(b, NULL));
    printf("preempt_libc: 50 sleeps of 1 ms beside a thread in memset: %.2f ms late at most\n", worst / 1e6);
    fflush(stdout);
    CHECK(worst < 50000000);   /* 5 slices: it used to be seconds */
}

/* ---------------------------------------------------------- integrity */

enum { WORKERS = 4, MAXLEN = 256 << 10 };
static _Atomic long rounds, moves;

static void *worker(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 7;
    unsigned char *src = malloc(MAXLEN + 1), *dst = malloc(MAXLEN + 1);
    CHECK(src && dst);
    int vp = ito_vproc_self();
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t n = 1 + test_rand(&seed) % MAXLEN;
        unsigned char c = (unsigned char)(1 + test_rand(&seed) % 255);
        memset(src, c, n);
        src[n] = 0;
        CHECK_EQ(strlen((char *)src), n);
        memcpy(dst, src, n);
        CHECK_EQ(memcmp(dst, src, n), 0);
        CHECK(memchr(dst, 0, n) == NULL);
        dst[n - 1] = (unsigned char)(c ^ 0xff);
        CHECK(memcmp(dst, src, n) != 0);
        memmove(dst + 1, dst, n - 1);
        CHECK_EQ(dst[n - 1], c);
        atomic_fetch_add_explicit(&rounds, 1, memory_order_relaxed);
        int now = ito_vproc_self();
        if (now != vp) {
            atomic_fetch_add_explicit(&moves, 1, memory_order_relaxed);
            vp = now;
        }
    }
    free(src);
    free(dst);
    return NULL;
}

static void part_integrity(void)
{
    ito_stats_t s0, s1;
    OK(ito_stats_get(&s0));
    ito_thread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        OK(ito_spawn(&t[i], NULL, worker, (void *)(intptr_t)i));
    test_sleep_cpu_time(1500);
    atomic_store(&stop, true);
    for (int i = 0; i < WORKERS; i++)
        OK(ito_join(t[i], NULL));
    OK(ito_stats_get(&s1));
    printf("preempt_libc: %ld rounds of memset, strlen, memcpy, memcmp, memchr, memmove checked; "
           "%llu slices ended in the threads, %ld moves between vprocs\n",
           atomic_load(&rounds), (unsigned long long)(s1.preemptions - s0.preemptions), atomic_load(&moves));
    CHECK(atomic_load(&rounds) > 0);
    CHECK(s1.preemptions > s0.preemptions);
}

int main(void)
{
    test_run_part("preempt_libc", "latency", part_latency, 1, NULL);
    const char *const fast[] = { "ITO_TIMESLICE_US", "1000", NULL };
    test_run_part("preempt_libc", "integrity", part_integrity, 2, fast);
    return 0;
}
