/* SPDX-License-Identifier: MIT */
/*
 * nbody — Barnes–Hut N-body simulation in 2D (quadtree), [SA Fig. 2]:
 * speedup against a sequential version as processors are added.
 *
 *   nbody --impl seq|ito|pthread [--cpus N] [--n BODIES] [--steps S] [--grain G]
 *         [--sync fork|block|spin] [--spin-us US]
 *
 * One time step: bounding box; build the quadtree (bodies are partitioned in
 * place into quadrants, recursively, down to leaves of at most LEAF_MAX
 * bodies; each node gets its mass and centre of mass); compute every body's
 * acceleration by walking the tree (opening angle THETA); advance velocities
 * and positions (semi-implicit Euler).
 *
 * Versions (the same functions do the work in all three, so the results are
 * bit-for-bit the same; run.py compares the "hash" of the final positions with
 * the sequential one and reports a mismatch as an error):
 *   seq      plain calls, no threads.
 *   ito      fine-grained threads, recursive fork/join: the tree build forks a
 *            thread per quadrant holding more than BUILD_GRAIN bodies; the
 *            force phase splits the body range in halves down to G bodies
 *            (default 8) and forks one half at each level, so a step creates
 *            thousands of threads; the update phase likewise down to
 *            UPDATE_GRAIN bodies. ito runs on --cpus vprocs.
 *   pthread  one thread per CPU (the main thread is one of them), each pinned
 *            to its CPU, kept across steps and synchronized by barriers;
 *            static partition: the first levels of the tree are built by the
 *            main thread, the subtrees below them are dealt out round-robin;
 *            bodies are split into equal contiguous ranges for the force and
 *            update phases.
 *
 * --sync ([SA Table 5]: two programs at once): "fork" is the ito version
 * above (ito's default); "block" and "spin" run the worker version for
 * either implementation — one worker per CPU (ito: per vproc, ito threads,
 * not pinned by the program), barriers between phases. "block": the barrier
 * blocks at once (pthread: pthread_barrier_t, pthread's default; ito: mutex
 * and condition). "spin": a waiter first spins for --spin-us (default 200),
 * as OpenMP runtimes do, then blocks; an ito waiter spins by yielding its
 * vproc, a POSIX thread with the pause instruction.
 *
 * The bodies start as a 2D Plummer-like cluster from a fixed pseudo-random
 * seed. Prints the time of the S steps (initialization excluded).
 */
#include "common.h"

#include <math.h>
#include <stdatomic.h>

#define LEAF_MAX 8          /* bodies per leaf */
#define MAX_DEPTH 48        /* a cell this deep is a leaf whatever it holds */
#define BUILD_GRAIN 256     /* ito: fork a subtree build above this many bodies */
#define UPDATE_GRAIN 1024   /* ito: update phase grain */
#define THETA 0.5
#define EPS2 1e-4           /* softening */
#define DT 1e-3
#define BLOCK 64            /* nodes a builder takes from the pool at once */

typedef struct body {
    double x, y, vx, vy, m;
    int id, pad_;
} body_t;

typedef struct node {
    double cx, cy, mass;    /* centre of mass, total mass */
    double x0, y0, size;    /* the square cell */
    struct node *child[4];
    int lo, hi;             /* its bodies: B[lo..hi) */
    int leaf;
} node_t;

static body_t *B;
static double *AX, *AY;
static int N;
static node_t *root;
static node_t *pool;
static long pool_cap;
static _Atomic long pool_next;
static long force_grain = 8;
static _Atomic long spawns;
static enum { SEQ, ITO, PTH } impl;
static enum { SY_FORK, SY_BLOCK, SY_SPIN } sync_kind;
static long spin_us = 200;

/* ---------------------------------------------------------------- the tree */

struct alloc { node_t *cur, *end; };

static node_t *node_new(struct alloc *a)
{
    if (a->cur == a->end) {
        long i = atomic_fetch_add_explicit(&pool_next, BLOCK, memory_order_relaxed);
        if (i + BLOCK > pool_cap)
            bench_fail("node pool exhausted (%ld nodes)", pool_cap);
        a->cur = pool + i;
        a->end = a->cur + BLOCK;
    }
    node_t *nd = a->cur++;
    memset(nd, 0, sizeof *nd);
    return nd;
}

/* Move the bodies of [lo,hi) whose coordinate is below mid to the front;
 * returns the index of the first one at or above it. */
static int partition(int lo, int hi, int axis, double mid)
{
    int i = lo, j = hi - 1;
    while (i <= j) {
        double c = axis ? B[i].y : B[i].x;
        if (c < mid) {
            i++;
        } else {
            body_t t = B[i];
            B[i] = B[j];
            B[j] = t;
            j--;
        }
    }
    return i;
}

static void summarize_leaf(node_t *nd)
{
    double m = 0, x = 0, y = 0;
    for (int j = nd->lo; j < nd->hi; j++) {
        m += B[j].m;
        x += B[j].m * B[j].x;
        y += B[j].m * B[j].y;
    }
    nd->mass = m;
    nd->cx = m > 0 ? x / m : nd->x0;
    nd->cy = m > 0 ? y / m : nd->y0;
}

static void summarize_internal(node_t *nd)
{
    double m = 0, x = 0, y = 0;
    for (int q = 0; q < 4; q++) {
        node_t *c = nd->child[q];
        if (c) {
            m += c->mass;
            x += c->mass * c->cx;
            y += c->mass * c->cy;
        }
    }
    nd->mass = m;
    nd->cx = m > 0 ? x / m : nd->x0;
    nd->cy = m > 0 ? y / m : nd->y0;
}

static bool is_leaf(const node_t *nd, int depth)
{
    return nd->hi - nd->lo <= LEAF_MAX || depth >= MAX_DEPTH;
}

/* Partition nd's bodies into its quadrants and create the non-empty children. */
static void split(node_t *nd, struct alloc *al)
{
    double h = nd->size / 2, xm = nd->x0 + h, ym = nd->y0 + h;
    int s = partition(nd->lo, nd->hi, 1, ym);
    int a = partition(nd->lo, s, 0, xm);
    int b = partition(s, nd->hi, 0, xm);
    int bounds[5] = { nd->lo, a, s, b, nd->hi };
    for (int q = 0; q < 4; q++) {
        if (bounds[q + 1] == bounds[q])
            continue;
        node_t *c = node_new(al);
        c->x0 = nd->x0 + (q & 1) * h;
        c->y0 = nd->y0 + (q >> 1) * h;
        c->size = h;
        c->lo = bounds[q];
        c->hi = bounds[q + 1];
        nd->child[q] = c;
    }
}

struct build_arg { node_t *nd; int depth; };

static void *build_task(void *arg);

/* Build the subtree of nd (geometry and body range set). */
static void build(node_t *nd, int depth, struct alloc *al)
{
    if (is_leaf(nd, depth)) {
        nd->leaf = 1;
        summarize_leaf(nd);
        return;
    }
    split(nd, al);
    if (impl == ITO) {
        ito_thread_t t[4];
        struct build_arg args[4];
        bool forked[4] = { false, false, false, false };
        for (int q = 0; q < 4; q++) {
            node_t *c = nd->child[q];
            if (c && c->hi - c->lo > BUILD_GRAIN) {
                args[q] = (struct build_arg){ c, depth + 1 };
                CHECK0(ito_spawn(&t[q], NULL, build_task, &args[q]));
                atomic_fetch_add_explicit(&spawns, 1, memory_order_relaxed);
                forked[q] = true;
            }
        }
        for (int q = 0; q < 4; q++)
            if (nd->child[q] && !forked[q])
                build(nd->child[q], depth + 1, al);
        for (int q = 0; q < 4; q++)
            if (forked[q])
                CHECK0(ito_join(t[q], NULL));
    } else {
        for (int q = 0; q < 4; q++)
            if (nd->child[q])
                build(nd->child[q], depth + 1, al);
    }
    summarize_internal(nd);
}

static void *build_task(void *arg)
{
    struct build_arg *a = arg;
    struct alloc al = { 0, 0 };   /* each thread takes its own blocks */
    build(a->nd, a->depth, &al);
    return NULL;
}

/* The root cell: a square holding every body. */
static node_t *make_root(struct alloc *al)
{
    double minx = B[0].x, maxx = B[0].x, miny = B[0].y, maxy = B[0].y;
    for (int i = 1; i < N; i++) {
        minx = fmin(minx, B[i].x);
        maxx = fmax(maxx, B[i].x);
        miny = fmin(miny, B[i].y);
        maxy = fmax(maxy, B[i].y);
    }
    atomic_store_explicit(&pool_next, 0, memory_order_relaxed);
    node_t *r = node_new(al);
    double size = fmax(maxx - minx, maxy - miny);
    r->x0 = minx;
    r->y0 = miny;
    r->size = size * (1 + 1e-9) + 1e-12;
    r->lo = 0;
    r->hi = N;
    return r;
}

/* pthreads: the levels above `topd` are built by the main thread, the
 * subtrees at depth topd are collected in `front` for the workers. */
static node_t **front;
static int *front_depth;
static int nfront;
static int topd;            /* depth of the frontier: 4^topd >= 8 x threads */

static void build_top(node_t *nd, int depth, struct alloc *al)
{
    if (depth == topd) {
        front[nfront] = nd;
        front_depth[nfront++] = depth;
        return;
    }
    if (is_leaf(nd, depth)) {
        nd->leaf = 1;
        summarize_leaf(nd);
        return;
    }
    split(nd, al);
    for (int q = 0; q < 4; q++)
        if (nd->child[q])
            build_top(nd->child[q], depth + 1, al);
}

static void summarize_top(node_t *nd, int depth)
{
    if (depth == topd || nd->leaf)
        return;
    for (int q = 0; q < 4; q++)
        if (nd->child[q])
            summarize_top(nd->child[q], depth + 1);
    summarize_internal(nd);
}

/* ---------------------------------------------------------- force, update */

static void accel(int i)
{
    const double xi = B[i].x, yi = B[i].y;
    double ax = 0, ay = 0;
    node_t *stack[4 * MAX_DEPTH + 8];
    int sp = 0;
    stack[sp++] = root;
    while (sp) {
        node_t *nd = stack[--sp];
        if (nd->leaf) {
            for (int j = nd->lo; j < nd->hi; j++) {
                if (j == i)
                    continue;
                double dx = B[j].x - xi, dy = B[j].y - yi;
                double r2 = dx * dx + dy * dy + EPS2;
                double f = B[j].m / (r2 * sqrt(r2));
                ax += f * dx;
                ay += f * dy;
            }
            continue;
        }
        double dx = nd->cx - xi, dy = nd->cy - yi;
        double d2 = dx * dx + dy * dy;
        if (nd->size * nd->size < THETA * THETA * d2) {
            double r2 = d2 + EPS2;
            double f = nd->mass / (r2 * sqrt(r2));
            ax += f * dx;
            ay += f * dy;
        } else {
            for (int q = 3; q >= 0; q--)
                if (nd->child[q])
                    stack[sp++] = nd->child[q];
        }
    }
    AX[i] = ax;
    AY[i] = ay;
}

static void forces(int lo, int hi)
{
    for (int i = lo; i < hi; i++)
        accel(i);
}

static void update(int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        B[i].vx += AX[i] * DT;
        B[i].vy += AY[i] * DT;
        B[i].x += B[i].vx * DT;
        B[i].y += B[i].vy * DT;
    }
}

/* ito: recursive fork/join over a body range. */
struct range { int lo, hi; long grain; void (*fn)(int, int); };

static void *range_task(void *arg)
{
    struct range *r = arg;
    if (r->hi - r->lo <= r->grain) {
        r->fn(r->lo, r->hi);
        return NULL;
    }
    int mid = r->lo + (r->hi - r->lo) / 2;
    struct range left = { r->lo, mid, r->grain, r->fn }, right = { mid, r->hi, r->grain, r->fn };
    ito_thread_t t;
    CHECK0(ito_spawn(&t, NULL, range_task, &left));
    atomic_fetch_add_explicit(&spawns, 1, memory_order_relaxed);
    range_task(&right);
    CHECK0(ito_join(t, NULL));
    return NULL;
}

static void par_range(void (*fn)(int, int), long grain)
{
    struct range r = { 0, N, grain, fn };
    range_task(&r);
}

/* pthreads: a pool of T threads (the main thread is number 0). */
enum { PH_BUILD, PH_FORCE, PH_UPDATE, PH_EXIT };
static int nthreads;
static int phase;
static pthread_barrier_t bar;

/* The barrier of the worker version: a generation count, spinning (SY_SPIN)
 * then blocking on a mutex and condition of the implementation's kind. */
static struct {
    _Atomic unsigned arrived, gen;
    pthread_mutex_t pm;
    pthread_cond_t pc;
    ito_mutex_t im;
    ito_cond_t ic;
} wb;

static void wb_lock(void) { impl == ITO ? (void)ito_mutex_lock(&wb.im) : (void)pthread_mutex_lock(&wb.pm); }
static void wb_unlock(void) { impl == ITO ? (void)ito_mutex_unlock(&wb.im) : (void)pthread_mutex_unlock(&wb.pm); }

static void bar_wait(void)
{
    if (impl == PTH && sync_kind == SY_BLOCK) {
        pthread_barrier_wait(&bar);
        return;
    }
    unsigned g = atomic_load(&wb.gen);
    if (atomic_fetch_add(&wb.arrived, 1) + 1 == (unsigned)nthreads) {
        atomic_store(&wb.arrived, 0);
        wb_lock();
        atomic_fetch_add(&wb.gen, 1);
        impl == ITO ? (void)ito_cond_broadcast(&wb.ic) : (void)pthread_cond_broadcast(&wb.pc);
        wb_unlock();
        return;
    }
    if (sync_kind == SY_SPIN) {
        uint64_t end = bench_now_ns() + (uint64_t)spin_us * 1000u;
        while (atomic_load_explicit(&wb.gen, memory_order_acquire) == g && bench_now_ns() < end) {
            if (impl == ITO)
                ito_yield();
            else
                __builtin_ia32_pause();
        }
    }
    wb_lock();
    while (atomic_load(&wb.gen) == g)
        impl == ITO ? (void)ito_cond_wait(&wb.ic, &wb.im) : (void)pthread_cond_wait(&wb.pc, &wb.pm);
    wb_unlock();
}

static void do_phase(int k)
{
    int lo = (int)((long)N * k / nthreads), hi = (int)((long)N * (k + 1) / nthreads);
    struct alloc al = { 0, 0 };
    switch (phase) {
    case PH_BUILD:
        for (int f = k; f < nfront; f += nthreads)
            build(front[f], front_depth[f], &al);
        break;
    case PH_FORCE:
        forces(lo, hi);
        break;
    case PH_UPDATE:
        update(lo, hi);
        break;
    }
}

static void *worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (;;) {
        bar_wait();
        if (phase == PH_EXIT)
            return NULL;
        do_phase(k);
        bar_wait();
    }
}

static void run_phase(int ph)
{
    phase = ph;
    if (nthreads > 1)
        bar_wait();
    do_phase(0);
    if (nthreads > 1)
        bar_wait();
}

/* ------------------------------------------------------------------- main */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static void init_bodies(void)
{
    for (int i = 0; i < N; i++) {
        double u = 0.001 + 0.99 * urand();
        double r = 1.0 / sqrt(pow(u, -2.0 / 3.0) - 1.0);
        if (r > 20)
            r = 20;
        double a = 2 * M_PI * urand();
        double menc = r * r * r / pow(r * r + 1, 1.5);
        double v = 0.7 * sqrt(menc / r);
        B[i] = (body_t){ .x = r * cos(a), .y = r * sin(a), .vx = -v * sin(a), .vy = v * cos(a),
                         .m = 1.0 / N, .id = i };
    }
}

/* FNV-1a over the final positions, in body-id order. */
static uint64_t positions_hash(double *sum)
{
    double *p = xmalloc(sizeof(double) * 2 * (size_t)N);
    double s = 0;
    for (int i = 0; i < N; i++) {
        p[2 * B[i].id] = B[i].x;
        p[2 * B[i].id + 1] = B[i].y;
        s += fabs(B[i].x) + fabs(B[i].y);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *c = (const unsigned char *)p;
    for (size_t k = 0; k < sizeof(double) * 2 * (size_t)N; k++) {
        h ^= c[k];
        h *= 0x100000001b3ull;
    }
    free(p);
    *sum = s;
    return h;
}

static void step(void)
{
    struct alloc al = { 0, 0 };
    root = make_root(&al);
    switch (impl) {
    case SEQ:
        build(root, 0, &al);
        forces(0, N);
        update(0, N);
        break;
    case ITO:
        if (sync_kind == SY_FORK) {
            build(root, 0, &al);
            par_range(forces, force_grain);
            par_range(update, UPDATE_GRAIN);
            break;
        }
        __attribute__((fallthrough));   /* the worker version */
    case PTH: {
        nfront = 0;
        build_top(root, 0, &al);
        run_phase(PH_BUILD);
        summarize_top(root, 0);
        run_phase(PH_FORCE);
        run_phase(PH_UPDATE);
        break;
    }
    }
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--cpus", "--vprocs", "--n", "--steps", "--grain", "--sync",
                                         "--spin-us", NULL };
    bench_exp = "nbody";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    if (strcmp(bench_impl, "seq") == 0)
        impl = SEQ;
    else if (strcmp(bench_impl, "ito") == 0)
        impl = ITO;
    else if (strcmp(bench_impl, "pthread") == 0)
        impl = PTH;
    else
        bench_fail("--impl must be seq, ito or pthread");
    int cpus = impl == SEQ ? 1 : arg_cpus(argc, argv);
    N = (int)arg_int(argc, argv, "--n", 20000);
    int steps = (int)arg_int(argc, argv, "--steps", 3);
    force_grain = arg_int(argc, argv, "--grain", 8);
    if (N < 2 || steps < 1 || force_grain < 1)
        bench_fail("--n must be >= 2, --steps and --grain >= 1");
    const char *sy = arg_str(argc, argv, "--sync", impl == ITO ? "fork" : "block");
    sync_kind = !strcmp(sy, "fork") ? SY_FORK : !strcmp(sy, "block") ? SY_BLOCK : !strcmp(sy, "spin") ? SY_SPIN : -1;
    spin_us = arg_int(argc, argv, "--spin-us", 200);
    if ((int)sync_kind < 0 || (sync_kind == SY_FORK && impl != ITO) || spin_us < 0)
        bench_fail("--sync must be fork (ito only), block or spin; --spin-us >= 0");

    B = xmalloc(sizeof *B * (size_t)N);
    AX = xmalloc(sizeof(double) * (size_t)N);
    AY = xmalloc(sizeof(double) * (size_t)N);
    /* Nodes: fewer than 2N in practice, plus the unused rest of each
     * builder's last block (one builder per forked subtree or frontier cell). */
    pool_cap = 2L * N + (long)BLOCK * (4L * N / BUILD_GRAIN + 4096 + 64);
    pool = xmalloc(sizeof *pool * (size_t)pool_cap);
    memset(pool, 0, sizeof *pool * (size_t)pool_cap);
    memset(AX, 0, sizeof(double) * (size_t)N);
    memset(AY, 0, sizeof(double) * (size_t)N);
    init_bodies();

    pthread_t *ts = NULL;
    ito_thread_t *its = NULL;
    if (impl == SEQ) {
        restrict_to_cpus(1);
    } else if (impl == ITO && sync_kind == SY_FORK) {
        ito_start(cpus);
    } else {
        if (impl == ITO) {
            ito_start(cpus);
            CHECK0(ito_mutex_init(&wb.im));
            CHECK0(ito_cond_init(&wb.ic));
        } else {
            restrict_to_cpus(cpus);
            pin_pthread(pthread_self(), cpu_nth(0));
            CHECK0(pthread_mutex_init(&wb.pm, NULL));
            CHECK0(pthread_cond_init(&wb.pc, NULL));
        }
        nthreads = cpus;
        topd = 1;
        while ((1L << (2 * topd)) < 8L * nthreads)
            topd++;
        front = xmalloc(sizeof *front * ((size_t)1 << (2 * topd)));
        front_depth = xmalloc(sizeof *front_depth * ((size_t)1 << (2 * topd)));
        if (nthreads > 1 && impl == PTH) {
            CHECK0(pthread_barrier_init(&bar, NULL, (unsigned)nthreads));
            ts = xmalloc(sizeof *ts * (size_t)nthreads);
            for (int k = 1; k < nthreads; k++) {
                pthread_attr_t a;
                attr_pinned(&a, cpu_nth(k));
                CHECK0(pthread_create(&ts[k], &a, worker, (void *)(intptr_t)k));
                pthread_attr_destroy(&a);
            }
        } else if (nthreads > 1) {
            its = xmalloc(sizeof *its * (size_t)nthreads);
            for (int k = 1; k < nthreads; k++)
                CHECK0(ito_spawn(&its[k], NULL, worker, (void *)(intptr_t)k));
        }
    }

    atomic_store(&spawns, 0);
    uint64_t t0 = bench_now_ns();
    for (int s = 0; s < steps; s++)
        step();
    uint64_t t1 = bench_now_ns();

    if (sync_kind != SY_FORK && nthreads > 1) {
        phase = PH_EXIT;
        bar_wait();
        for (int k = 1; k < nthreads; k++)
            CHECK0(impl == PTH ? pthread_join(ts[k], NULL) : ito_join(its[k], NULL));
    }
    double sum;
    uint64_t h = positions_hash(&sum);
    if (!isfinite(sum))
        bench_fail("positions are not finite");

    json_begin(bench_exp, bench_impl);
    if (impl == ITO)
        json_common_ito();
    else
        json_common_pthread(cpus);
    json_int("n", N);
    json_int("steps", steps);
    json_str("sync", sy);
    if (impl == ITO && sync_kind == SY_FORK) {
        json_int("grain", force_grain);
        json_int("threads_per_step", (atomic_load(&spawns) + steps - 1) / steps);
    } else if (impl == PTH) {
        json_int("threads", nthreads);
    }
    json_int("nodes", (long long)atomic_load(&pool_next));
    json_num("seconds", (double)(t1 - t0) / 1e9);
    json_num("s_per_step", (double)(t1 - t0) / 1e9 / steps);
    json_hex("hash", h);
    json_num("checksum", sum);
    json_end();
    return 0;
}
