/* SPDX-License-Identifier: MIT */
/*
 * memory — resident memory per blocked thread: COUNT threads are created and
 * each blocks on a condition variable; once all of them wait, VmRSS is read
 * from /proc/self/status and (VmRSS - VmRSS before creating them) / COUNT is
 * printed. Then they are released and joined.
 *
 *   memory --impl ito|pthread [--cpus N] [--count COUNT]
 *
 * ito: default COUNT 1,000,000, default stack size and kernel limits.
 * pthread: default COUNT 10,000 with the default stack size (RLIMIT_STACK);
 * when pthread_create fails (EAGAIN: pid_max, RLIMIT_NPROC,
 * vm.max_map_count), the threads created so far are measured and the output
 * says "limited": true, why, and the count reached.
 *
 * VmRSS counts user memory only: the kernel's own stack of each kernel thread
 * (16 KiB on x86-64) and its task structures are not in it, so the pthread
 * figure understates what a pthread costs.
 * The handle array is allocated and touched before the first reading.
 */
#include "common.h"

static ito_mutex_t im = ITO_MUTEX_INIT;
static ito_cond_t i_all = ITO_COND_INIT, i_go = ITO_COND_INIT;
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t p_all = PTHREAD_COND_INITIALIZER, p_go = PTHREAD_COND_INITIALIZER;
static long arrived, expected;
static int go;

static void *ito_waiter(void *arg)
{
    CHECK0(ito_mutex_lock(&im));
    if (++arrived == expected)
        CHECK0(ito_cond_signal(&i_all));
    while (!go)
        CHECK0(ito_cond_wait(&i_go, &im));
    CHECK0(ito_mutex_unlock(&im));
    return arg;
}

static void *pthread_waiter(void *arg)
{
    CHECK0(pthread_mutex_lock(&pm));
    if (++arrived == expected)
        CHECK0(pthread_cond_signal(&p_all));
    while (!go)
        CHECK0(pthread_cond_wait(&p_go, &pm));
    CHECK0(pthread_mutex_unlock(&pm));
    return arg;
}

/* VmRSS in KiB. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        bench_fail("/proc/self/status: %s", strerror(errno));
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
            break;
    fclose(f);
    if (v < 0)
        bench_fail("no VmRSS in /proc/self/status");
    return v;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--count", NULL };
    bench_exp = "memory";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    bool ito = strcmp(bench_impl, "ito") == 0;
    if (!ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    int cpus = arg_cpus(argc, argv);
    long requested = (long)arg_int(argc, argv, "--count", ito ? 1000000 : 10000);
    if (requested < 1)
        bench_fail("--count must be positive");
    long count = requested;
    bool limited = false;
    char reason[200] = "";
    long before, blocked;
    uint64_t t0, t1, t2;

    if (ito) {
        ito_start(cpus);
        ito_thread_t *ts = xmalloc(sizeof *ts * (size_t)count);
        memset(ts, 0, sizeof *ts * (size_t)count);
        expected = count;
        before = rss_kib();
        t0 = bench_now_ns();
        for (long i = 0; i < count; i++)
            CHECK0(ito_spawn(&ts[i], NULL, ito_waiter, NULL));
        CHECK0(ito_mutex_lock(&im));
        while (arrived < expected)
            CHECK0(ito_cond_wait(&i_all, &im));
        CHECK0(ito_mutex_unlock(&im));
        t1 = bench_now_ns();
        blocked = rss_kib();
        CHECK0(ito_mutex_lock(&im));
        go = 1;
        CHECK0(ito_cond_broadcast(&i_go));
        CHECK0(ito_mutex_unlock(&im));
        for (long i = 0; i < count; i++)
            CHECK0(ito_join(ts[i], NULL));
        t2 = bench_now_ns();
    } else {
        restrict_to_cpus(cpus);
        pthread_t *ts = xmalloc(sizeof *ts * (size_t)count);
        memset(ts, 0, sizeof *ts * (size_t)count);
        expected = count;
        before = rss_kib();
        t0 = bench_now_ns();
        long i;
        for (i = 0; i < count; i++) {
            int e = pthread_create(&ts[i], NULL, pthread_waiter, NULL);
            if (e) {
                if (e != EAGAIN || i == 0)
                    bench_fail("pthread_create failed at thread %ld: %s", i, strerror(e));
                limited = true;
                snprintf(reason, sizeof reason, "pthread_create: %s after %ld threads (pid_max, RLIMIT_NPROC or vm.max_map_count)",
                         strerror(e), i);
                break;
            }
        }
        CHECK0(pthread_mutex_lock(&pm));
        count = i;
        expected = count;
        while (arrived < expected)
            CHECK0(pthread_cond_wait(&p_all, &pm));
        CHECK0(pthread_mutex_unlock(&pm));
        t1 = bench_now_ns();
        blocked = rss_kib();
        CHECK0(pthread_mutex_lock(&pm));
        go = 1;
        CHECK0(pthread_cond_broadcast(&p_go));
        CHECK0(pthread_mutex_unlock(&pm));
        for (i = 0; i < count; i++)
            CHECK0(pthread_join(ts[i], NULL));
        t2 = bench_now_ns();
    }
    json_begin(bench_exp, bench_impl);
    if (ito)
        json_common_ito();
    else
        json_common_pthread(cpus);
    json_int("count", count);
    json_int("requested", requested);
    json_bool("limited", limited);
    if (limited)
        json_str("limit_reason", reason);
    json_int("rss_before_kib", before);
    json_int("rss_blocked_kib", blocked);
    json_num("kib_per_thread", (double)(blocked - before) / (double)count);
    json_num("create_block_s", (double)(t1 - t0) / 1e9);
    json_num("release_join_s", (double)(t2 - t1) / 1e9);
    json_end();
    return 0;
}
