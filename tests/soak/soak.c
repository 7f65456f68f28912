/* SPDX-License-Identifier: MIT */
/* The soak (issue 22, item 7): a mixed workload at one priority, on 2 or
 * more vprocs, for a given time, with exact accounting and a watchdog.
 *
 *   queue     6 producers and 6 consumers on a bounded queue under a mutex
 *             and two condition variables. Every item is (producer, number);
 *             each producer's items must leave the queue in order, each
 *             exactly once (checked under the queue's mutex), and the sums
 *             of what was produced and consumed must agree.
 *   spawn     4 threads spawning 1-4 children and joining them: every child
 *             joined, each returning its argument + 1.
 *   sem       8 threads through a semaphore of 3 (a pool of 3): never more
 *             than 3 inside; the value is 3 again at the end.
 *   pingpong  two threads passing the turn through two semaphores: as many
 *             pongs as pings.
 *   sleep     4 sleepers of 50 us - 2 ms (ito_sleep_ns): none returns early
 *             (CLOCK_MONOTONIC, ito_now_ns); lateness is reported.
 *   pipe      4 writer/reader pairs over pipes (ito_write, ito_read) moving
 *             64-bit sequence numbers in random-sized pieces: every byte
 *             arrives in order, and the reader gets what the writer wrote.
 *   main      main's own sleep to the end of the run.
 *
 * A watchdog (a POSIX thread: it must not depend on ito's scheduling; it
 * runs SCHED_FIFO where it may) looks at every part's count each 20 ms. A
 * part fails the run (exit 1, naming it) when its count has not moved
 *   - starved: while the process ran the stall time's worth of CPU time on
 *     each vproc (CLOCK_PROCESS_CPUTIME_ID: 2 x 1.5 s on 2 vprocs in make
 *     test) — the process computed, the part did not; a machine busy with
 *     other work only makes this take longer in wall time;
 *   - stuck: for the stall time of wall time, less the time the machine held
 *     the process back — the time its kernel threads spent ready but
 *     waiting for a CPU (run_delay in /proc/self/task/TID/schedstat, summed
 *     over them, sampled every 100 ms), and any tick of the watchdog itself
 *     more than 250 ms late (the process stopped, the machine swamped). This
 *     finds a part that waits for what never comes, which uses no CPU time.
 *     SOAK_CREDIT=vproc credits the waiting divided by the vprocs, and finds
 *     more (a vproc that sleeps while another is kept off its CPU, see
 *     docs/reliability.md); SOAK_CREDIT=none credits nothing.
 * An end (from the stop to the last join) longer than SOAK_END_S fails the
 * run too. Before it exits the watchdog prints what the process and each of
 * its kernel threads got meanwhile, and asks ito for a thread dump
 * (ITO_DUMP_SIGNAL, SIGQUIT unless the environment names another). The
 * figures give each part's longest time without progress, both ways
 * (longest_gap_ms, less the credits; longest_cpu_gap_ms, CPU time per vproc;
 * to the watchdog's 20 ms), and the time credited (cpu_wait_ms,
 * watchdog_late_ms).
 *
 * Settings (argv[1] overrides SOAK_SECONDS):
 *   SOAK_SECONDS  how long the workload runs (3 s; 2 s in sanitizer builds)
 *   SOAK_STALL_S  how long a part may make no progress: 5 s, or half the
 *                 run when that is shorter (1.5 s in `make test`, 1 s in
 *                 its sanitizer builds)
 *   SOAK_END_S    how long the end may take, from the stop to the last
 *                 join (10 s): every part finishes its work in hand (the
 *                 consumers empty the queue, the readers their pipes)
 *   SOAK_CREDIT   all (the default), vproc or none: the credit of "stuck"
 *   SOAK_SEED     the random seed (the process ID)
 * At the end one line of figures per part (key=value), then one summary
 * line "soak: result=ok ..." that scripts/soak.sh reads. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "common.h"

#include "watchdog.h"

static ito_thread_t spawn(void *(*fn)(void *), void *arg, const char *name)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_name(&a, name));
    ito_thread_t t;
    OK(ito_spawn(&t, &a, fn, arg));
    return t;
}

/* ---- queue: 6 producers, 6 consumers ---- */

enum { NPROD = 6, NCONS = 6, QCAP = 64 };
static ito_mutex_t qm = ITO_MUTEX_INIT;
static ito_cond_t q_not_full = ITO_COND_INIT, q_not_empty = ITO_COND_INIT;
static uint64_t qbuf[QCAP];
static int qhead, qcount;              /* qm */
static int producers_left = NPROD;     /* qm */
static uint64_t q_next[NPROD];         /* qm: the number each producer's next item must carry */
static uint64_t produced[NPROD], produced_sum[NPROD];   /* each producer's own */
static uint64_t consumed[NCONS], consumed_sum[NCONS];   /* each consumer's own */

static void *producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 7919 + 1);
    uint64_t i = 0, sum = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t item = ((uint64_t)id << 48) | i;
        OK(ito_mutex_lock(&qm));
        while (qcount == QCAP)
            OK(ito_cond_wait(&q_not_full, &qm));
        qbuf[(qhead + qcount) % QCAP] = item;
        qcount++;
        OK(ito_cond_signal(&q_not_empty));
        OK(ito_mutex_unlock(&qm));
        sum += item;
        i++;
        if (test_rand(&seed) % 64 == 0)
            ito_yield();
    }
    produced[id] = i;
    produced_sum[id] = sum;
    OK(ito_mutex_lock(&qm));
    if (--producers_left == 0)
        OK(ito_cond_broadcast(&q_not_empty));
    OK(ito_mutex_unlock(&qm));
    atomic_fetch_sub(&running[P_QUEUE], 1);
    return NULL;
}

static void *consumer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t n = 0, sum = 0;
    for (;;) {
        OK(ito_mutex_lock(&qm));
        while (qcount == 0 && producers_left > 0)
            OK(ito_cond_wait(&q_not_empty, &qm));
        if (qcount == 0) {   /* every producer done and the queue empty */
            OK(ito_mutex_unlock(&qm));
            break;
        }
        uint64_t item = qbuf[qhead];
        qhead = (qhead + 1) % QCAP;
        qcount--;
        int p = (int)(item >> 48);
        uint64_t k = item & ((1ull << 48) - 1);
        if (p >= NPROD || k != q_next[p])
            fail("queue: consumer %d took item %llu of producer %d, expected item %llu: lost, duplicated or "
                 "out of order", id, (unsigned long long)k, p, p < NPROD ? (unsigned long long)q_next[p] : 0ull);
        q_next[p]++;
        OK(ito_cond_signal(&q_not_full));
        OK(ito_mutex_unlock(&qm));
        sum += item;
        n++;
        atomic_fetch_add_explicit(&progress[P_QUEUE], 1, memory_order_relaxed);
    }
    consumed[id] = n;
    consumed_sum[id] = sum;
    atomic_fetch_sub(&running[P_QUEUE], 1);
    return NULL;
}

/* ---- spawn: 4 threads spawning and joining ---- */

enum { NSPAWNERS = 4 };
static _Atomic uint64_t children_ran;
static uint64_t spawned[NSPAWNERS], joined[NSPAWNERS];

static void *child(void *arg)
{
    atomic_fetch_add_explicit(&children_ran, 1, memory_order_relaxed);
    if ((uintptr_t)arg % 5 == 0)
        ito_yield();
    return (void *)((uintptr_t)arg + 1);
}

static void *spawner(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 104729 + 3);
    uint64_t s = 0, j = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        ito_thread_t t[4];
        int n = 1 + (int)(test_rand(&seed) % 4);
        for (int k = 0; k < n; k++) {
            OK(ito_spawn(&t[k], NULL, child, (void *)(uintptr_t)(s + k)));
        }
        for (int k = 0; k < n; k++) {
            void *r;
            OK(ito_join(t[k], &r));
            if ((uintptr_t)r != s + k + 1)
                fail("spawn: child %llu of spawner %d returned %llu", (unsigned long long)(s + k), id,
                     (unsigned long long)(uintptr_t)r);
            j++;
        }
        s += (uint64_t)n;
        atomic_fetch_add_explicit(&progress[P_SPAWN], (uint64_t)n, memory_order_relaxed);
    }
    spawned[id] = s;
    joined[id] = j;
    atomic_fetch_sub(&running[P_SPAWN], 1);
    return NULL;
}

/* ---- sem: 8 threads through a semaphore of 3 ---- */

enum { NSEM = 8, SEM_POOL = 3 };
static ito_sem_t pool;
static atomic_int inside, inside_max;
static uint64_t sem_ops[NSEM];

static void *sem_user(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 15485863 + 5);
    uint64_t n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        OK(ito_sem_wait(&pool));
        int in = atomic_fetch_add(&inside, 1) + 1;
        if (in > SEM_POOL)
            fail("sem: %d threads inside a semaphore of %d", in, SEM_POOL);
        int m = atomic_load(&inside_max);
        while (in > m && !atomic_compare_exchange_weak(&inside_max, &m, in))
            ;
        if (test_rand(&seed) % 4 == 0)
            ito_yield();   /* hold it a while */
        atomic_fetch_sub(&inside, 1);
        OK(ito_sem_post(&pool));
        n++;
        atomic_fetch_add_explicit(&progress[P_SEM], 1, memory_order_relaxed);
    }
    sem_ops[id] = n;
    atomic_fetch_sub(&running[P_SEM], 1);
    return NULL;
}

/* ---- pingpong: two threads, two semaphores ---- */

static ito_sem_t ping_sem, pong_sem;
static uint64_t pings, pongs;
static atomic_bool pong_quit;

static void *pinger(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        OK(ito_sem_post(&ping_sem));
        OK(ito_sem_wait(&pong_sem));
        pings++;
        atomic_fetch_add_explicit(&progress[P_PINGPONG], 1, memory_order_relaxed);
    }
    atomic_store(&pong_quit, true);
    OK(ito_sem_post(&ping_sem));   /* the last one: the ponger sees pong_quit */
    atomic_fetch_sub(&running[P_PINGPONG], 1);
    return NULL;
}

static void *ponger(void *arg)
{
    (void)arg;
    for (;;) {
        OK(ito_sem_wait(&ping_sem));
        if (atomic_load(&pong_quit))
            break;
        pongs++;
        OK(ito_sem_post(&pong_sem));
    }
    atomic_fetch_sub(&running[P_PINGPONG], 1);
    return NULL;
}

/* ---- sleep: 4 sleepers ---- */

enum { NSLEEP = 4 };
static uint64_t sleeps[NSLEEP], late_sum_ns[NSLEEP], late_max_ns[NSLEEP];

static void *sleeper(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 32452843 + 7);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t want = 50000 + test_rand(&seed) % 1950000;   /* 50 us .. 2 ms */
        uint64_t t0 = mono_ns();
        OK(ito_sleep_ns(want));
        uint64_t got = mono_ns() - t0;
        if (got < want)
            fail("sleep: sleeper %d asked for %llu ns and slept %llu ns (short sleep)", id,
                 (unsigned long long)want, (unsigned long long)got);
        uint64_t late = got - want;
        late_sum_ns[id] += late;
        if (late > late_max_ns[id])
            late_max_ns[id] = late;
        sleeps[id]++;
        atomic_fetch_add_explicit(&progress[P_SLEEP], 1, memory_order_relaxed);
    }
    atomic_fetch_sub(&running[P_SLEEP], 1);
    return NULL;
}

/* ---- pipe: 4 writer/reader pairs ---- */

enum { NPIPES = 4, PIPE_CHUNK_WORDS = 512 };
struct pipe_pair {
    int fd[2];
    uint64_t written;    /* writer: bytes */
    uint64_t read;       /* reader: bytes */
    uint64_t reads, writes;
};
static struct pipe_pair pipes[NPIPES];

static void *pipe_writer(void *arg)
{
    struct pipe_pair *pp = arg;
    int id = (int)(pp - pipes);
    uint64_t seed = seed0 ^ ((uint64_t)id * 49979687 + 11);
    uint64_t words[PIPE_CHUNK_WORDS], seq = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t n = 1 + test_rand(&seed) % PIPE_CHUNK_WORDS;
        for (size_t k = 0; k < n; k++)
            words[k] = seq++;
        const char *p = (const char *)words;
        size_t left = n * sizeof words[0];
        while (left > 0) {
            ssize_t w = ito_write(pp->fd[1], p, left);
            if (w <= 0)
                fail("pipe %d: ito_write returned %zd (%s)", id, w, w < 0 ? strerror(test_errno()) : "nothing");
            p += w;
            left -= (size_t)w;
            pp->written += (uint64_t)w;
            pp->writes++;
        }
    }
    if (ito_close(pp->fd[1]) != 0)
        fail("pipe %d: ito_close of the writing end: %s", id, strerror(test_errno()));
    atomic_fetch_sub(&running[P_PIPE], 1);
    return NULL;
}

static void *pipe_reader(void *arg)
{
    struct pipe_pair *pp = arg;
    int id = (int)(pp - pipes);
    uint64_t seed = seed0 ^ ((uint64_t)id * 86028121 + 13);
    unsigned char buf[4096];
    uint64_t off = 0;   /* bytes of the stream checked */
    for (;;) {
        size_t want = 1 + test_rand(&seed) % sizeof buf;
        ssize_t r = ito_read(pp->fd[0], buf, want);
        if (r < 0)
            fail("pipe %d: ito_read: %s", id, strerror(test_errno()));
        if (r == 0)
            break;
        pp->reads++;
        for (ssize_t k = 0; k < r; k++, off++) {
            uint64_t seq = off / 8;
            unsigned char expect = ((const unsigned char *)&seq)[off % 8];
            if (buf[k] != expect)
                fail("pipe %d: byte %llu of the stream is 0x%02x, expected 0x%02x (word %llu): a byte lost, "
                     "doubled or out of order", id, (unsigned long long)off, buf[k], expect,
                     (unsigned long long)seq);
        }
        atomic_fetch_add_explicit(&progress[P_PIPE], (uint64_t)r, memory_order_relaxed);
    }
    pp->read = off;
    OK(ito_close(pp->fd[0]));
    atomic_fetch_sub(&running[P_PIPE], 1);
    return NULL;
}

/* ---- figures and the end ---- */

static uint64_t sum_of(const uint64_t *a, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

static uint64_t min_of(const uint64_t *a, int n)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (a[i] < m)
            m = a[i];
    return m;
}

static double seconds_run;

/* The running counts (the watchdog's view: figures(stderr) on a failure),
 * or, after the end, the exact ones. */
static void figures(FILE *f)
{
    fprintf(f, "soak: longest_gap_ms");
    for (int p = 0; p < NPARTS; p++)
        fprintf(f, " %s=%.0f", part_name[p], atomic_load(&longest_gap_ns[p]) / 1e6);
    fprintf(f, "\nsoak: longest_cpu_gap_ms");
    for (int p = 0; p < NPARTS; p++)
        fprintf(f, " %s=%.0f", part_name[p], atomic_load(&longest_cpu_gap_ns[p]) / 1e6);
    fprintf(f, "\n");
    if (atomic_load(&phase) < 2) {
        fprintf(f, "soak: counts so far:");
        for (int p = 0; p < NPARTS; p++)
            fprintf(f, " %s=%llu", part_name[p], (unsigned long long)atomic_load(&progress[p]));
        fprintf(f, "\n");
        return;
    }
    uint64_t items = sum_of(consumed, NCONS), sp = sum_of(spawned, NSPAWNERS), so = sum_of(sem_ops, NSEM);
    uint64_t sl = sum_of(sleeps, NSLEEP), pb = 0, pr = 0, pw = 0, late_max = 0;
    for (int i = 0; i < NPIPES; i++) {
        pb += pipes[i].read;
        pr += pipes[i].reads;
        pw += pipes[i].writes;
    }
    for (int i = 0; i < NSLEEP; i++)
        if (late_max_ns[i] > late_max)
            late_max = late_max_ns[i];
    fprintf(f, "soak: part=queue items=%llu producers=%d consumers=%d min_per_producer=%llu min_per_consumer=%llu\n",
            (unsigned long long)items, NPROD, NCONS, (unsigned long long)min_of(produced, NPROD),
            (unsigned long long)min_of(consumed, NCONS));
    fprintf(f, "soak: part=spawn joined=%llu spawners=%d min_per_spawner=%llu\n", (unsigned long long)sp, NSPAWNERS,
            (unsigned long long)min_of(joined, NSPAWNERS));
    fprintf(f, "soak: part=sem ops=%llu threads=%d pool=%d max_inside=%d min_per_thread=%llu\n",
            (unsigned long long)so, NSEM, SEM_POOL, atomic_load(&inside_max), (unsigned long long)min_of(sem_ops, NSEM));
    fprintf(f, "soak: part=pingpong round_trips=%llu\n", (unsigned long long)pings);
    fprintf(f, "soak: part=sleep sleeps=%llu sleepers=%d late_mean_us=%.1f late_max_us=%.1f min_per_sleeper=%llu\n",
            (unsigned long long)sl, NSLEEP, sl ? sum_of(late_sum_ns, NSLEEP) / 1e3 / (double)sl : 0.0,
            late_max / 1e3, (unsigned long long)min_of(sleeps, NSLEEP));
    fprintf(f, "soak: part=pipe bytes=%llu words=%llu pairs=%d reads=%llu writes=%llu\n", (unsigned long long)pb,
            (unsigned long long)(pb / 8), NPIPES, (unsigned long long)pr, (unsigned long long)pw);
    uint64_t gap = 0, cgap = 0;
    for (int p = 0; p < NPARTS; p++) {
        if (atomic_load(&longest_gap_ns[p]) > gap)
            gap = atomic_load(&longest_gap_ns[p]);
        if (atomic_load(&longest_cpu_gap_ns[p]) > cgap)
            cgap = atomic_load(&longest_cpu_gap_ns[p]);
    }
    fprintf(f,
            "soak: result=ok policy=%s vprocs=%d seed=%llu seconds=%.2f queue_items=%llu spawn_joins=%llu sem_ops=%llu "
            "pingpong=%llu sleeps=%llu sleep_late_max_us=%.0f pipe_words=%llu longest_gap_ms=%.0f longest_cpu_gap_ms=%.0f watchdog=%s watchdog_late_ms=%.0f cpu_wait_ms=%.0f\n",
            ito_policy_name(), ito_vproc_count(), (unsigned long long)seed0, seconds_run, (unsigned long long)items, (unsigned long long)sp,
            (unsigned long long)so, (unsigned long long)pings, (unsigned long long)sl, late_max / 1e3,
            (unsigned long long)(pb / 8), gap / 1e6, cgap / 1e6, watchdog_rt ? "fifo" : "other", atomic_load(&unseen_ns) / 1e6,
            atomic_load(&waited_ns) / 1e6);
}

static void check_accounting(void)
{
    for (int p = 0; p < NPROD; p++)
        if (q_next[p] != produced[p])
            fail("queue: producer %d made %llu items, %llu were consumed", p, (unsigned long long)produced[p],
                 (unsigned long long)q_next[p]);
    CHECK_EQ(sum_of(produced, NPROD), sum_of(consumed, NCONS));
    CHECK_EQ(sum_of(produced_sum, NPROD), sum_of(consumed_sum, NCONS));
    CHECK_EQ(qcount, 0);
    CHECK_EQ(producers_left, 0);

    uint64_t sp = sum_of(spawned, NSPAWNERS);
    CHECK_EQ(sp, sum_of(joined, NSPAWNERS));
    CHECK_EQ(sp, atomic_load(&children_ran));

    unsigned v;
    OK(ito_sem_get_value(&pool, &v));
    CHECK_EQ(v, SEM_POOL);
    CHECK_EQ(atomic_load(&inside), 0);
    CHECK(atomic_load(&inside_max) <= SEM_POOL);

    CHECK_EQ(pings, pongs);
    OK(ito_sem_get_value(&ping_sem, &v));
    CHECK_EQ(v, 0);
    OK(ito_sem_get_value(&pong_sem, &v));
    CHECK_EQ(v, 0);

    for (int i = 0; i < NPIPES; i++) {
        if (pipes[i].read != pipes[i].written)
            fail("pipe %d: %llu bytes written, %llu read", i, (unsigned long long)pipes[i].written,
                 (unsigned long long)pipes[i].read);
        CHECK_EQ(pipes[i].read % 8, 0);
    }
    for (int p = 0; p < NPARTS; p++)
        CHECK_EQ(atomic_load(&running[p]), 0);
    /* Every part did something (the watchdog saw to it while the run went
     * on; this also covers a run shorter than the stall time). */
    for (int p = 0; p < NPARTS; p++)
        if (atomic_load(&progress[p]) == 0)
            fail("part '%s' did nothing in the whole run", part_name[p]);
}

static double env_seconds(const char *name, double dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0)) {
        fprintf(stderr, "soak: %s=%s is not a positive number of seconds\n", name, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double seconds = env_seconds("SOAK_SECONDS", TEST_SANITIZED ? 2 : 3);
    if (argc > 1) {
        char *end;
        seconds = strtod(argv[1], &end);
        if (*end || !(seconds > 0)) {
            fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
            return 2;
        }
    }
    stall_ns = (uint64_t)(env_seconds("SOAK_STALL_S", seconds / 2 < 5 ? seconds / 2 : 5) * 1e9);
    end_ns = (uint64_t)(env_seconds("SOAK_END_S", 10) * 1e9);
    const char *cr = getenv("SOAK_CREDIT");
    if (cr && !strcmp(cr, "none"))
        credit_div = 0;
    else if (cr && !strcmp(cr, "vproc"))
        credit_div = 0;   /* set below, once the vprocs are known */
    else if (cr && strcmp(cr, "all")) {
        fprintf(stderr, "soak: SOAK_CREDIT=%s: all, vproc or none\n", cr);
        return 2;
    }
    const char *ss = getenv("SOAK_SEED");
    seed0 = ss && *ss ? strtoull(ss, NULL, 0) : (uint64_t)getpid();

    /* On a stall, a thread dump (runtime/dump_signal.c). */
    if (!getenv("ITO_DUMP_SIGNAL"))
        setenv("ITO_DUMP_SIGNAL", "SIGQUIT", 1);
    const char *ds = getenv("ITO_DUMP_SIGNAL");
    dump_sig = !strcmp(ds, "SIGQUIT") ? SIGQUIT : 0;

    ito_config_t c = ITO_CONFIG_INIT;
    if (!getenv("ITO_VPROCS")) {
        cpu_set_t set;
        CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
        if (CPU_COUNT(&set) < 2)
            c.vprocs = 2;   /* the workload is for 2 or more */
    }
    OK(ito_init(&c));
    CHECK(ito_vproc_count() >= 2 || getenv("ITO_VPROCS"));
    if (cr && !strcmp(cr, "vproc"))
        credit_div = (uint64_t)ito_vproc_count();

    pthread_t wd;
    {
        /* The watchdog must take no signal of ito's (it is not an ito thread). */
        sigset_t all, old;
        sigfillset(&all);
        CHECK(pthread_sigmask(SIG_BLOCK, &all, &old) == 0);
        CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
        CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
    }

    OK(ito_sem_init(&pool, SEM_POOL));
    OK(ito_sem_init(&ping_sem, 0));
    OK(ito_sem_init(&pong_sem, 0));
    for (int i = 0; i < NPIPES; i++)
        CHECK(pipe2(pipes[i].fd, O_CLOEXEC) == 0);

    enum { NT = NPROD + NCONS + NSPAWNERS + NSEM + 2 + NSLEEP + 2 * NPIPES };
    ito_thread_t t[NT];
    int n = 0;
    atomic_store(&running[P_QUEUE], NPROD + NCONS);
    atomic_store(&running[P_SPAWN], NSPAWNERS);
    atomic_store(&running[P_SEM], NSEM);
    atomic_store(&running[P_PINGPONG], 2);
    atomic_store(&running[P_SLEEP], NSLEEP);
    atomic_store(&running[P_PIPE], 2 * NPIPES);
    atomic_store(&running[P_MAIN], 1);
    for (int i = 0; i < NCONS; i++)
        t[n++] = spawn(consumer, (void *)(intptr_t)i, "consumer");
    for (int i = 0; i < NPROD; i++)
        t[n++] = spawn(producer, (void *)(intptr_t)i, "producer");
    for (int i = 0; i < NSPAWNERS; i++)
        t[n++] = spawn(spawner, (void *)(intptr_t)i, "spawner");
    for (int i = 0; i < NSEM; i++)
        t[n++] = spawn(sem_user, (void *)(intptr_t)i, "sem");
    t[n++] = spawn(ponger, NULL, "ponger");
    t[n++] = spawn(pinger, NULL, "pinger");
    for (int i = 0; i < NSLEEP; i++)
        t[n++] = spawn(sleeper, (void *)(intptr_t)i, "sleeper");
    for (int i = 0; i < NPIPES; i++) {
        t[n++] = spawn(pipe_reader, &pipes[i], "pipe-reader");
        t[n++] = spawn(pipe_writer, &pipes[i], "pipe-writer");
    }
    CHECK_EQ(n, NT);

    /* Main's own part: sleep to the end in 50 ms steps. */
    uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(seconds * 1e9);
    for (uint64_t now; (now = mono_ns()) < end;) {
        uint64_t d = end - now < 50000000 ? end - now : 50000000;
        OK(ito_sleep_ns(d));
        atomic_fetch_add(&progress[P_MAIN], 1);
    }
    seconds_run = (mono_ns() - t0) / 1e9;
    atomic_store(&phase, 1);
    atomic_store(&stop, true);
    atomic_fetch_sub(&running[P_MAIN], 1);
    for (int i = 0; i < n; i++)
        OK(ito_join(t[i], NULL));
    atomic_store(&phase, 2);
    CHECK(pthread_join(wd, NULL) == 0);

    check_accounting();
    figures(stdout);
    return 0;
}
