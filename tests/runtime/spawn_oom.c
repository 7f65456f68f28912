/* SPDX-License-Identifier: MIT */
/* Running out of memory at a spawn: ito_spawn fails with EAGAIN, and the
 * process goes on (issue 22). A child process spawns threads that park on a
 * semaphore until ito_spawn fails; that must be EAGAIN, every thread spawned
 * before it must start (its stack was promised at its spawn: a first run that
 * cannot map one would abort), a spawn must succeed again once some of them
 * have been joined, and all must be joined.
 *   spawn_oom       the child runs under RLIMIT_AS (2 vprocs). Not under
 *                   sanitizers: their shadow memory does not fit a limit.
 *   spawn_oom_maps  (OOM_CASE=maps) the child runs with vm.max_map_count
 *                   lowered to just above the mappings it has (1 vproc: the
 *                   threads first run after the failure). Needs root: skipped
 *                   otherwise. The setting is the whole machine's: the child
 *                   restores it as soon as it has checked the first runs, and
 *                   the parent restores it whatever became of the child. */
#include "common.h"

#include <fcntl.h>
#include <sys/resource.h>

#define CAP 100000   /* spawns at most: the limit must be reached before */
#define MAX_MAP_COUNT "/proc/sys/vm/max_map_count"

static ito_sem_t gate;
static _Atomic long started, ending, finished;
static long *finished_ids;   /* indices of the threads that have ended, in order */
static ito_thread_t *ts;

static void *parked(void *arg)
{
    atomic_fetch_add(&started, 1);
    OK(ito_sem_wait(&gate));
    finished_ids[atomic_fetch_add(&ending, 1)] = (long)(intptr_t)arg;
    atomic_fetch_add(&finished, 1);   /* (after its id: see exhaust) */
    return arg;
}

static void *quick(void *arg) { return arg; }

/* Yield until cond holds, for at most secs seconds: no timed wait (its timer
 * may need memory), and the threads run on this vproc too. */
#define YIELD_UNTIL(cond, secs)                                                         \
    do {                                                                                \
        uint64_t yu_end_ = ito_now_ns() + (uint64_t)(secs) * 1000000000ull;             \
        while (!(cond)) {                                                               \
            if (ito_now_ns() > yu_end_) {                                               \
                fprintf(stderr, "%s:%d: timed out after %ds: %s\n", __FILE__, __LINE__, \
                        (int)(secs), #cond);                                            \
                abort();                                                                \
            }                                                                           \
            ito_yield();                                                                \
        }                                                                               \
    } while (0)

static long read_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static bool write_long(const char *path, long v)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return false;
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%ld\n", v);
    bool ok = write(fd, buf, (size_t)len) == len;
    close(fd);
    return ok;
}

static long count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    long n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* ------------------------------------------------------------- the limits */

static void limit_as(void)
{
    /* What the process has mapped now, and 256 MiB more: a few hundred
     * default stacks (512 KiB of address space each). */
    long pages = read_long("/proc/self/statm");
    CHECK(pages > 0);
    rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
    struct rlimit rl = { lim, lim };
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}

static void unlimit_as(void) {}

static long old_max = -1;

static void limit_maps(void)
{
    /* Room for a few more mappings: a thread that first runs splits its
     * stack's mapping for a guard page, until the kernel refuses. */
    CHECK(write_long(MAX_MAP_COUNT, count_maps() + 40));
}

static void unlimit_maps(void) { CHECK(write_long(MAX_MAP_COUNT, old_max)); }

/* ---------------------------------------------------------------- the run */

static void exhaust(void (*limit)(void), void (*unlimit)(void))
{
    ts = calloc(CAP, sizeof *ts);
    finished_ids = calloc(CAP, sizeof *finished_ids);
    CHECK(ts && finished_ids);
    OK(ito_sem_init(&gate, 0));
    fprintf(stderr, "limit reached after ");   /* (stdio's buffers exist before the limit) */
    limit();

    long n = 0;
    int e;
    while ((e = ito_spawn(&ts[n], NULL, parked, (void *)(intptr_t)n)) == 0 && ++n < CAP)
        if (n % 32 == 0)
            ito_yield();   /* (some threads start meanwhile) */
    CHECK_EQ(e, EAGAIN);
    CHECK(n >= 8);
    /* Every thread spawned before the failure starts. */
    YIELD_UNTIL(atomic_load(&started) == n, 15);

    /* Some end, one at a time (finished_ids), and are joined: a spawn succeeds again. */
    long k = n / 2;
    for (long i = 0; i < k; i++) {
        OK(ito_sem_post(&gate));
        YIELD_UNTIL(atomic_load(&finished) == i + 1, 15);
    }
    for (long i = 0; i < k; i++) {
        void *r;
        OK(ito_join(ts[finished_ids[i]], &r));
        CHECK_EQ((intptr_t)r, finished_ids[i]);
        ts[finished_ids[i]] = ITO_THREAD_NULL;
    }
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, quick, NULL));
    OK(ito_join(t, NULL));
    unlimit();

    /* The rest end and are joined; spawning goes on. */
    for (long i = k; i < n; i++)
        OK(ito_sem_post(&gate));
    for (long i = 0; i < n; i++)
        if (!ito_thread_equal(ts[i], ITO_THREAD_NULL))
            OK(ito_join(ts[i], NULL));
    CHECK_EQ(atomic_load(&finished), n);
    for (int i = 0; i < 1000; i++) {
        OK(ito_spawn(&t, NULL, quick, NULL));
        OK(ito_join(t, NULL));
    }
    fprintf(stderr, "%ld threads; all ran and were joined\n", n);
}

/* ----------------------------------------------------------------- parent */

static int run_child(const char *arg)
{
    char err[8192];
    int st = test_run_self_watched(arg, err, sizeof err, 20000, 0, NULL);
    fputs(err, stderr);
    char sb[128];
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "spawn_oom: the %s child %s\n", arg, test_status_str(st, sb, sizeof sb));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "as") == 0) {
        OK(ito_init(NULL));
        exhaust(limit_as, unlimit_as);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "maps") == 0) {
        old_max = atol(getenv("OOM_OLD_MAX_MAP_COUNT"));
        ito_config_t c = ITO_CONFIG_INIT;
        c.vprocs = 1;
        OK(ito_init(&c));
        exhaust(limit_maps, unlimit_maps);
        return 0;
    }

    const char *which = getenv("OOM_CASE");
    if (!which || strcmp(which, "maps") != 0) {
        if (TEST_SANITIZED) {
            printf("spawn_oom: skipped (sanitizers cannot run under RLIMIT_AS)\n");
            return 77;
        }
        return run_child("as");
    }
    old_max = read_long(MAX_MAP_COUNT);
    if (old_max < 0 || !write_long(MAX_MAP_COUNT, old_max)) {
        printf("spawn_oom_maps: skipped (cannot set vm.max_map_count: needs root)\n");
        return 77;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", old_max);
    setenv("OOM_OLD_MAX_MAP_COUNT", buf, 1);
    int r = run_child("maps");
    /* Whatever became of the child (killed at the limit, crashed). */
    CHECK(write_long(MAX_MAP_COUNT, old_max));
    CHECK_EQ(read_long(MAX_MAP_COUNT), old_max);
    return r;
}
