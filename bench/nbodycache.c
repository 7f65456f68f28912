/* SPDX-License-Identifier: MIT */
/*
 * nbodycache — N-body with its data behind a buffer cache, [SA Fig. 3]:
 * run time as the share of the data that fits in memory shrinks, when a
 * cache miss blocks a thread in the kernel for 50 ms.
 *
 *   nbodycache --impl ito|pthread [--cpus N] [--fit F] [--miss annotated|plain]
 *              [--n BODIES] [--pages P] [--steps S] [--threads T] [--miss-ms MS]
 *
 * The bodies (2D, direct all-pairs summation) are split into P pages. An
 * application-level buffer cache holds round(F x P) of them, shared by all
 * threads under one lock (ito_mutex for ito, pthread_mutex for pthreads), LRU
 * replacement, warm at the start (pages 0 .. capacity-1 resident, so F = 1
 * has no misses). Each step forks T threads, one per contiguous chunk of
 * bodies; a thread visits every page once, in a pseudo-random order fixed by
 * (chunk, step), and adds that page's pull to each body of its chunk; then
 * the main thread advances velocities and positions. The miss rate grows as
 * F falls; it is not exactly 1 - F: it depends on how the threads' visits
 * interleave, so it differs between implementations (with many reads in
 * flight, more threads find their page being read and wait for it).
 *
 * A miss is a real kernel block: nanosleep(--miss-ms, default 50 ms), made
 * with the cache lock released (other threads keep using the cache; a thread
 * that wants a page already being read waits for that read on a condition
 * variable: "waits"). --miss annotated brackets the call with ITO_BLOCKING
 * (ito runs; a pthread run never calls ito, so the mode changes nothing
 * there); --miss plain makes it bare. With ITO_ACTIVATIONS=0 in the
 * environment ito ignores the brackets: a blocked call holds its vproc (seed
 * 000's "FastThreads on kernel threads").
 *
 * ito runs T threads on --cpus vprocs; pthreads run T threads with the
 * process restricted to the first --cpus usable CPUs (not pinned one by one:
 * the kernel balances them). T defaults to 4 x cpus. Both compute the same
 * chunks in the same order, so the final positions ("hash") are bit-for-bit
 * the same for every run with the same --n, --pages, --steps and --threads,
 * whatever the fit and implementation. Prints the time of the S steps,
 * misses, waits, the most threads in a miss's nanosleep at once
 * ("max_inflight": while blocked calls hold their vprocs it cannot exceed
 * the vprocs).
 */
#include "common.h"

#include <math.h>
#include <stdatomic.h>

#define EPS2 1e-3           /* softening */
#define DT 1e-3

static enum { ITO, PTH } impl;
static bool annotated;
static int N, P, T, steps, cap;
static long page_len;        /* bodies per page (the last may hold fewer) */
static long miss_ns;
static double *X, *Y, *VX, *VY, *M, *AX, *AY;
static int cur_step;

/* ---------------------------------------------------------- the cache */

enum { ABSENT, LOADING, RESIDENT };

static struct {
    int *state;              /* per page */
    uint64_t *used;          /* per page: LRU stamp */
    uint64_t clock;
    int resident;
    long hits, misses, waits, evictions;
} C;

static ito_mutex_t imu;
static ito_cond_t icv;
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcv = PTHREAD_COND_INITIALIZER;
static _Atomic int inflight, max_inflight;   /* threads inside nanosleep */

static void lock(void) { CHECK0(impl == ITO ? ito_mutex_lock(&imu) : pthread_mutex_lock(&pmu)); }
static void unlock(void) { CHECK0(impl == ITO ? ito_mutex_unlock(&imu) : pthread_mutex_unlock(&pmu)); }
static void wait_cv(void) { CHECK0(impl == ITO ? ito_cond_wait(&icv, &imu) : pthread_cond_wait(&pcv, &pmu)); }
static void wake_all(void) { CHECK0(impl == ITO ? ito_cond_broadcast(&icv) : pthread_cond_broadcast(&pcv)); }

/* The I/O of a miss: a real kernel block of miss_ns, counted while in it. */
static void sleep_miss(void)
{
    struct timespec ts = { miss_ns / 1000000000L, miss_ns % 1000000000L };
    int now = atomic_fetch_add(&inflight, 1) + 1, max = atomic_load(&max_inflight);
    while (now > max && !atomic_compare_exchange_weak(&max_inflight, &max, now)) {}
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    atomic_fetch_sub(&inflight, 1);
}

static void read_page(void)
{
    if (impl == ITO && annotated) {
        ito_blocking_begin();   /* only the call (and two atomics) inside */
        sleep_miss();
        ito_blocking_end();
    } else {
        sleep_miss();
    }
}

/* Make page p resident (reading it on a miss) and mark it used. */
static void cache_get(int p)
{
    lock();
    while (C.state[p] == LOADING) {
        C.waits++;
        wait_cv();
    }
    if (C.state[p] == RESIDENT) {
        C.hits++;
    } else {
        C.misses++;
        C.state[p] = LOADING;
        unlock();
        read_page();
        lock();
        if (C.resident == cap) {   /* evict the least recently used resident page */
            int v = -1;
            for (int q = 0; q < P; q++)
                if (C.state[q] == RESIDENT && (v < 0 || C.used[q] < C.used[v]))
                    v = q;
            if (v >= 0) {
                C.state[v] = ABSENT;
                C.resident--;
                C.evictions++;
            }
        }
        if (C.resident < cap) {
            C.state[p] = RESIDENT;
            C.resident++;
        } else {
            C.state[p] = ABSENT;   /* capacity 0: used once, not kept */
        }
        wake_all();
    }
    C.used[p] = ++C.clock;
    unlock();
}

/* ------------------------------------------------------------- the work */

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Thread k: the pull of every page on the bodies of chunk k. */
static void *chunk_task(void *arg)
{
    int k = (int)(intptr_t)arg;
    int lo = (int)((long)N * k / T), hi = (int)((long)N * (k + 1) / T);
    int order[P];
    uint64_t r = mix(((uint64_t)cur_step << 32) ^ (uint64_t)k);
    for (int j = 0; j < P; j++)
        order[j] = j;
    for (int j = P - 1; j > 0; j--) {   /* Fisher-Yates */
        r = mix(r);
        int s = (int)(r % (uint64_t)(j + 1)), t = order[j];
        order[j] = order[s];
        order[s] = t;
    }
    for (int i = lo; i < hi; i++)
        AX[i] = AY[i] = 0;
    for (int o = 0; o < P; o++) {
        int p = order[o];
        cache_get(p);
        long plo = p * page_len, phi = plo + page_len < N ? plo + page_len : N;
        for (int i = lo; i < hi; i++) {
            const double xi = X[i], yi = Y[i];
            double ax = 0, ay = 0;
            for (long j = plo; j < phi; j++) {
                double dx = X[j] - xi, dy = Y[j] - yi;
                double r2 = dx * dx + dy * dy + EPS2;
                double f = M[j] / (r2 * sqrt(r2));
                ax += f * dx;
                ay += f * dy;
            }
            AX[i] += ax;
            AY[i] += ay;
        }
    }
    return NULL;
}

static void update(void)
{
    for (int i = 0; i < N; i++) {
        VX[i] += AX[i] * DT;
        VY[i] += AY[i] * DT;
        X[i] += VX[i] * DT;
        Y[i] += VY[i] * DT;
    }
}

static void step(void)
{
    if (impl == ITO) {
        ito_thread_t t[T];
        for (int k = 0; k < T; k++)
            CHECK0(ito_spawn(&t[k], NULL, chunk_task, (void *)(intptr_t)k));
        for (int k = 0; k < T; k++)
            CHECK0(ito_join(t[k], NULL));
    } else {
        pthread_t t[T];
        for (int k = 0; k < T; k++)
            CHECK0(pthread_create(&t[k], NULL, chunk_task, (void *)(intptr_t)k));
        for (int k = 0; k < T; k++)
            CHECK0(pthread_join(t[k], NULL));
    }
    update();
}

static void init_bodies(void)
{
    uint64_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = mix(r);
        double u = 0.001 + 0.99 * (double)(r >> 11) * (1.0 / 9007199254740992.0);
        r = mix(r);
        double a = 2 * M_PI * (double)(r >> 11) * (1.0 / 9007199254740992.0);
        double rad = fmin(20, 1.0 / sqrt(pow(u, -2.0 / 3.0) - 1.0));
        double v = 0.7 * sqrt(rad * rad / pow(rad * rad + 1, 1.5));
        X[i] = rad * cos(a);
        Y[i] = rad * sin(a);
        VX[i] = -v * sin(a);
        VY[i] = v * cos(a);
        M[i] = 1.0 / N;
    }
}

/* FNV-1a over the final positions. */
static uint64_t positions_hash(double *sum)
{
    uint64_t h = 0xcbf29ce484222325ull;
    double s = 0;
    for (int i = 0; i < N; i++) {
        double v[2] = { X[i], Y[i] };
        const unsigned char *c = (const unsigned char *)v;
        for (size_t b = 0; b < sizeof v; b++) {
            h ^= c[b];
            h *= 0x100000001b3ull;
        }
        s += fabs(X[i]) + fabs(Y[i]);
    }
    *sum = s;
    return h;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--fit", "--miss", "--n", "--pages",
                                         "--steps", "--threads", "--miss-ms", NULL };
    bench_exp = "nbodycache";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    if (strcmp(bench_impl, "ito") == 0)
        impl = ITO;
    else if (strcmp(bench_impl, "pthread") == 0)
        impl = PTH;
    else
        bench_fail("--impl must be ito or pthread");
    const char *miss = arg_str(argc, argv, "--miss", "annotated");
    if (strcmp(miss, "annotated") && strcmp(miss, "plain"))
        bench_fail("--miss must be annotated or plain");
    annotated = strcmp(miss, "annotated") == 0;
    int cpus = arg_cpus(argc, argv);
    const char *fs = arg_str(argc, argv, "--fit", "1");
    char *end;
    double fit = strtod(fs, &end);
    if (*end || end == fs || !(fit >= 0 && fit <= 1))
        bench_fail("--fit must be a number between 0 and 1");
    N = (int)arg_int(argc, argv, "--n", 16000);
    P = (int)arg_int(argc, argv, "--pages", 20);
    steps = (int)arg_int(argc, argv, "--steps", 1);
    T = (int)arg_int(argc, argv, "--threads", 4L * cpus);
    long long ms = arg_int(argc, argv, "--miss-ms", 50);
    if (N < 2 || P < 1 || P > N || P > 1024 || steps < 1 || T < 1 || T > N || T > 4096 || ms < 0 || ms > 10000)
        bench_fail("need --n >= 2, 1 <= --pages <= min(n, 1024), --steps >= 1, 1 <= --threads <= min(n, 4096), "
                   "0 <= --miss-ms <= 10000");
    miss_ns = (long)ms * 1000000L;
    page_len = (N + P - 1) / P;
    P = (int)((N + page_len - 1) / page_len);   /* no empty page */
    cap = (int)lround(fit * P);

    double **arrays[] = { &X, &Y, &VX, &VY, &M, &AX, &AY };
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++)
        *arrays[a] = xmalloc(sizeof(double) * (size_t)N);
    init_bodies();
    C.state = xmalloc(sizeof *C.state * (size_t)P);
    C.used = xmalloc(sizeof *C.used * (size_t)P);
    for (int p = 0; p < P; p++) {   /* warm: the first cap pages are resident */
        C.state[p] = p < cap ? RESIDENT : ABSENT;
        C.used[p] = p < cap ? ++C.clock : 0;
    }
    C.resident = cap;

    ito_stats_t s0, s1;
    if (impl == ITO) {
        ito_start(cpus);
        CHECK0(ito_mutex_init(&imu));
        CHECK0(ito_cond_init(&icv));
        CHECK0(ito_stats_get(&s0));
    } else {
        restrict_to_cpus(cpus);
    }

    uint64_t t0 = bench_now_ns();
    for (cur_step = 0; cur_step < steps; cur_step++)
        step();
    uint64_t t1 = bench_now_ns();
    if (impl == ITO)
        CHECK0(ito_stats_get(&s1));

    double sum;
    uint64_t h = positions_hash(&sum);
    if (!isfinite(sum))
        bench_fail("positions are not finite");
    long accesses = (long)T * P * steps;
    if (C.hits + C.misses != accesses)
        bench_fail("cache accounting: %ld hits + %ld misses != %ld accesses", C.hits, C.misses, accesses);

    json_begin(bench_exp, bench_impl);
    if (impl == ITO) {
        json_common_ito();
        const char *act = getenv("ITO_ACTIVATIONS");
        json_bool("activations", !(act && strcmp(act, "0") == 0));
        json_ito_stats(&s0, &s1);
    } else {
        json_common_pthread(cpus);
    }
    json_str("miss", miss);
    json_num("fit", fit);
    json_int("n", N);
    json_int("pages", P);
    json_int("cache_pages", cap);
    json_int("steps", steps);
    json_int("threads", T);
    json_int("miss_ms", ms);
    json_int("accesses", accesses);
    json_int("misses", C.misses);
    json_int("waits", C.waits);
    json_int("evictions", C.evictions);
    json_int("max_inflight", atomic_load(&max_inflight));
    json_num("miss_rate", (double)C.misses / (double)accesses);
    json_num("seconds", (double)(t1 - t0) / 1e9);
    json_hex("hash", h);
    json_num("checksum", sum);
    json_end();
    return 0;
}
