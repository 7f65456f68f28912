/* SPDX-License-Identifier: MIT */
/*
 * handoff — how long a vproc stays lost to a blocked kernel call ([SA]'s
 * "blocked" event): the time from a thread entering a blocking system call
 * to another, ready thread running on that processor.
 *
 *   handoff --impl ito|pthread [--call bracketed|plain] [--n SAMPLES] [--block-us US]
 *
 * One processor. Thread B waits on a semaphore; A notes the time, posts it
 * (B is now ready) and blocks in nanosleep for --block-us. B notes when it
 * runs.
 * ito: one vproc; A brackets the call with ito_blocking_begin/end, so the
 * monitor must notice it and hand the vproc to a spare activation. With
 * --call plain A makes the bare call, which the monitor must find by itself
 * (a stall: runtime/carrier.c); --block-us must then be well above its 1 ms
 * threshold, or B simply runs when the sleep ends.
 * pthread: both pinned to one CPU; the kernel switches to B when A sleeps
 * (the floor: what a kernel thread costs here).
 * Prints the distribution of the latency (p50, p90, p99, max) in µs.
 */
#include <semaphore.h>
#include <stdatomic.h>

#include "common.h"

static bool use_ito, bracketed;
static int nsamples;
static long block_us;
static _Atomic uint64_t blocked_at;
static uint64_t *lat;

static ito_sem_t isem_go, isem_done;
static sem_t psem_go, psem_done;

static void go_wait(void) { use_ito ? (void)ito_sem_wait(&isem_go) : (void)sem_wait(&psem_go); }
static void go_post(void) { use_ito ? (void)ito_sem_post(&isem_go) : (void)sem_post(&psem_go); }
static void done_wait(void) { use_ito ? (void)ito_sem_wait(&isem_done) : (void)sem_wait(&psem_done); }
static void done_post(void) { use_ito ? (void)ito_sem_post(&isem_done) : (void)sem_post(&psem_done); }

static void *runner_b(void *arg)
{
    for (int i = 0; i < nsamples; i++) {
        go_wait();
        lat[i] = bench_now_ns() - atomic_load(&blocked_at);
        done_post();
    }
    return NULL;
}

static void *blocker_a(void *arg)
{
    struct timespec ts = { block_us / 1000000, (block_us % 1000000) * 1000 };
    for (int i = 0; i < nsamples; i++) {
        /* The time first: the kernel may run B the moment it is posted. */
        atomic_store(&blocked_at, bench_now_ns());
        go_post();   /* B is ready; an ito thread A keeps its vproc */
        if (use_ito && bracketed)
            ito_blocking_begin();
        nanosleep(&ts, NULL);
        if (use_ito && bracketed)
            ito_blocking_end();
        done_wait();
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--call", "--n", "--block-us", NULL };
    bench_exp = "handoff";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    nsamples = (int)arg_int(argc, argv, "--n", 200);
    block_us = (long)arg_int(argc, argv, "--block-us", 2000);
    const char *call = arg_str(argc, argv, "--call", "bracketed");
    bracketed = !strcmp(call, "bracketed");
    if ((strcmp(bench_impl, "ito") && strcmp(bench_impl, "pthread")) || (!bracketed && strcmp(call, "plain")) ||
        nsamples < 1 || block_us < 1)
        bench_fail("--impl must be ito or pthread; --call bracketed or plain; --n and --block-us must be positive");
    const char *impl = bench_impl;
    use_ito = !strcmp(impl, "ito");
    lat = xmalloc((size_t)nsamples * sizeof *lat);
    ito_stats_t st0 = { 0 }, st1 = { 0 };
    if (use_ito) {
        ito_start(1);
        ito_sem_init(&isem_go, 0);
        ito_sem_init(&isem_done, 0);
        ito_thread_t a, b;
        ito_stats_get(&st0);
        CHECK0(ito_spawn(&b, NULL, runner_b, NULL));
        ito_yield();   /* B waits on its semaphore */
        CHECK0(ito_spawn(&a, NULL, blocker_a, NULL));
        CHECK0(ito_join(a, NULL));
        CHECK0(ito_join(b, NULL));
        ito_stats_get(&st1);
    } else {
        cpus_usable();
        sem_init(&psem_go, 0, 0);
        sem_init(&psem_done, 0, 0);
        pthread_attr_t attr;
        attr_pinned(&attr, cpu_nth(0));
        pthread_t a, b;
        CHECK0(pthread_create(&b, &attr, runner_b, NULL));
        usleep(10000);
        CHECK0(pthread_create(&a, &attr, blocker_a, NULL));
        CHECK0(pthread_join(a, NULL));
        CHECK0(pthread_join(b, NULL));
    }
    qsort(lat, (size_t)nsamples, sizeof *lat, cmp_u64);
    json_begin("handoff", impl);
    json_int("n", nsamples);
    json_int("block_us", block_us);
    json_str("call", call);
    json_num("p50_us", lat[nsamples / 2] / 1e3);
    json_num("p90_us", lat[nsamples * 9 / 10] / 1e3);
    json_num("p99_us", lat[nsamples * 99 / 100] / 1e3);
    json_num("max_us", lat[nsamples - 1] / 1e3);
    if (use_ito) {
        json_common_ito();
        /* How the vproc was handed on: by the bracket, or found stalled. */
        json_int("handoffs", (long long)(st1.handoffs - st0.handoffs));
        json_int("stalls", (long long)(st1.stalls - st0.stalls));
    } else
        json_common_pthread(1);
    json_end();
    return 0;
}
