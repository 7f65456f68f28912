/* SPDX-License-Identifier: MIT */
/* The allocation table in shared memory (src/cpushare/table.c), across real
 * processes: join and leave, demand up and down, the generation futex, a
 * process killed while registered and while holding the lock (also at
 * random points), garbage in the segment, a header of another layout
 * version, and two users' segments kept apart.
 *
 * Each run uses its own segment name, so that tests running side by side
 * (and real ito processes) are not disturbed. */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpushare/table.h"
#include "base/futex.h"
#include "common.h"

static char name[64];
static int ncpu;   /* online processors, as the table sees them */

static struct ito__table_hints hints(int want, int priority)
{
    struct ito__table_hints h = { .priority = priority, .want = want, .vprocs = want < 1 ? 1 : want };
    for (int c = 0; c < ITO__ALLOC_MAX_CPUS; c++)
        ito__cpumask_set(&h.allowed, c);
    snprintf(h.name, sizeof h.name, "test%d", (int)getpid());
    return h;
}

static struct ito__table *open_table(void)
{
    struct ito__table *t;
    OK(ito__table_open(name, &t));
    return t;
}

static int grant_count(struct ito__table *t, int slot, uint64_t serial)
{
    ito__cpumask m;
    uint32_t gen;
    OK(ito__table_grant(t, slot, serial, &m, &gen, NULL));
    return ito__cpumask_count(&m);
}

static int used_slots(struct ito__table *t)
{
    ito__table_lock(t);
    int n = 0;
    for (int i = 0; i < ITO__ALLOC_SLOTS; i++)
        n += t->slot[i].state == ITO__SLOT_USED;
    ito__table_unlock(t);
    return n;
}

/* A child that joins with `want`, says so, then waits to be killed. If
 * `hold_lock`, it takes the lock before saying so. */
static pid_t child_join(int want, bool hold_lock)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        struct ito__table *t = open_table();
        int slot;
        uint64_t serial;
        struct ito__table_hints h = hints(want, 0);
        OK(ito__table_join(t, &h, &slot, &serial));
        if (hold_lock)
            ito__table_lock(t);
        CHECK(write(p[1], "r", 1) == 1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    CHECK(read(p[0], &c, 1) == 1);
    close(p[0]);
    return pid;
}

static void reap(pid_t pid, bool killed)
{
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (killed)
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* Divide: drops the dead, as a process's agent does twice a second while it
 * wants more than it holds. */
static void sweep(struct ito__table *t)
{
    ito__table_lock(t);
    ito__table_divide(t);
    ito__table_unlock(t);
}

static void join_leave_demand(void)
{
    struct ito__table *t = open_table();
    int slot;
    uint64_t serial;
    struct ito__table_hints me = hints(ITO__ALLOC_MAX_CPUS, 0);
    OK(ito__table_join(t, &me, &slot, &serial));
    ncpu = ito__cpumask_count(&t->h.online);
    CHECK(ncpu >= 1);
    CHECK_EQ(grant_count(t, slot, serial), ncpu);   /* alone: everything */

    uint32_t gen0 = atomic_load(&t->h.generation);
    pid_t a = child_join(ITO__ALLOC_MAX_CPUS, false);
    CHECK_EQ(used_slots(t), 2);
    int mine = grant_count(t, slot, serial);
    if (ncpu >= 2) {
        CHECK(atomic_load(&t->h.generation) != gen0);   /* our grant changed */
        CHECK_EQ(mine, (ncpu + 1) / 2);                 /* an equal share, the odd one shared */
    } else {
        CHECK_EQ(mine, 1);
    }

    /* Demand down and up: the other side's share follows. */
    me.want = 1;
    OK(ito__table_post(t, slot, serial, &me));
    CHECK_EQ(grant_count(t, slot, serial), 1);
    me.want = ITO__ALLOC_MAX_CPUS;
    OK(ito__table_post(t, slot, serial, &me));
    CHECK_EQ(grant_count(t, slot, serial), ncpu >= 2 ? (ncpu + 1) / 2 : 1);

    /* Priority: the higher one keeps everything it can use. */
    me.priority = 5;
    OK(ito__table_post(t, slot, serial, &me));
    CHECK_EQ(grant_count(t, slot, serial), ncpu);
    me.priority = 0;
    OK(ito__table_post(t, slot, serial, &me));

    /* Another process sleeping on the generation is woken by a change: the
     * child killed below, found gone by our sweep. */
    uint32_t gen = atomic_load(&t->h.generation);
    pid_t waiter = fork();
    CHECK(waiter >= 0);
    if (waiter == 0) {
        struct ito__table *wt = open_table();
        uint64_t deadline = ito_now_ns() + 30000000000ull;
        while (atomic_load(&wt->h.generation) == gen && ito_now_ns() < deadline)
            ito__futex_wait_shared(&wt->h.generation, gen, deadline);
        _exit(atomic_load(&wt->h.generation) != gen ? 0 : 1);
    }
    usleep(20000);
    kill(a, SIGKILL);
    reap(a, true);
    CHECK_EQ(used_slots(t), 2);   /* until somebody divides */
    sweep(t);
    int wst;
    CHECK(waitpid(waiter, &wst, 0) == waiter);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    CHECK_EQ(used_slots(t), 1);
    CHECK_EQ(grant_count(t, slot, serial), ncpu);   /* the dead one's processors came back */

    /* A full table (64 live processes) says ENOSPC. */
    pid_t kids[ITO__ALLOC_SLOTS];
    for (int i = 0; i < ITO__ALLOC_SLOTS - 1; i++)
        kids[i] = child_join(1, false);
    CHECK_EQ(used_slots(t), ITO__ALLOC_SLOTS);
    int s2;
    uint64_t ser2;
    CHECK_EQ(ito__table_join(t, &me, &s2, &ser2), ENOSPC);
    CHECK(grant_count(t, slot, serial) >= 1);
    for (int i = 0; i < ITO__ALLOC_SLOTS - 1; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < ITO__ALLOC_SLOTS - 1; i++)
        reap(kids[i], true);
    OK(ito__table_join(t, &me, &s2, &ser2));   /* room made from the dead */
    ito__table_leave(t, s2, ser2);
    CHECK_EQ(used_slots(t), 1);
    ito__table_leave(t, slot, serial);
    CHECK_EQ(used_slots(t), 0);
    ito__table_close(t);
    printf("alloc_table: join, leave, demand, priority, full table: ok (%d processors)\n", ncpu);
}

static void killed_holding_lock(void)
{
    struct ito__table *t = open_table();
    pid_t c = child_join(ITO__ALLOC_MAX_CPUS, true);
    uint64_t takeovers = t->h.takeovers;
    kill(c, SIGKILL);
    reap(c, true);
    uint64_t t0 = ito_now_ns();
    CHECK(ito__table_lock(t));   /* taken over: the caller must divide */
    CHECK_EQ(t->h.takeovers, takeovers + 1);
    ito__table_divide(t);
    ito__table_unlock(t);
    CHECK_EQ(used_slots(t), 0);
    printf("alloc_table: a holder killed with the lock: taken over after %.1f ms\n", (ito_now_ns() - t0) / 1e6);

    /* A holder that is alive but keeps the lock (stopped while holding it)
     * is taken over after a bound, with a warning; when it goes on, its
     * unlock leaves the new holder's lock alone. */
    int p[2], q[2];
    CHECK(pipe(p) == 0 && pipe(q) == 0);
    pid_t s = fork();
    CHECK(s >= 0);
    if (s == 0) {
        struct ito__table *ct = open_table();
        ito__table_lock(ct);
        CHECK(write(p[1], "r", 1) == 1);
        raise(SIGSTOP);
        ito__table_unlock(ct);
        CHECK(write(q[1], "u", 1) == 1);
        _exit(0);
    }
    char ch;
    CHECK(read(p[0], &ch, 1) == 1);
    int st;
    CHECK(waitpid(s, &st, WUNTRACED) == s && WIFSTOPPED(st));
    takeovers = t->h.takeovers;
    t0 = ito_now_ns();
    CHECK(ito__table_lock(t));   /* taken over */
    CHECK_EQ(t->h.takeovers, takeovers + 1);
    uint64_t mine = atomic_load(&t->h.lock);
    printf("alloc_table: a stopped holder: taken over after %.1f ms\n", (ito_now_ns() - t0) / 1e6);
    kill(s, SIGCONT);
    CHECK(read(q[0], &ch, 1) == 1);   /* it has unlocked: not ours */
    CHECK_EQ(atomic_load(&t->h.lock), mine);
    ito__table_divide(t);
    ito__table_unlock(t);
    CHECK_EQ(atomic_load(&t->h.lock), 0);
    reap(s, false);
    close(p[0]), close(p[1]), close(q[0]), close(q[1]);

    /* At random points: children join, post and leave in a loop; each is
     * killed after a random delay. The table must stay usable. */
    uint64_t seed = 42;
    int rounds = (int)test_scaled(60);
    if (rounds < 10)
        rounds = 10;
    for (int r = 0; r < rounds; r++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            struct ito__table *ct = open_table();
            for (unsigned k = 0;; k++) {
                int slot;
                uint64_t serial;
                struct ito__table_hints h = hints(1 + (int)(k % 4), (int)(k % 3));
                if (ito__table_join(ct, &h, &slot, &serial) != 0)
                    continue;
                h.want = 2;
                ito__table_post(ct, slot, serial, &h);
                ito__cpumask m;
                uint32_t gen;
                ito__table_grant(ct, slot, serial, &m, &gen, NULL);
                ito__table_leave(ct, slot, serial);
            }
        }
        usleep((useconds_t)(test_rand(&seed) % 3000));
        kill(pid, SIGKILL);
        reap(pid, true);
        sweep(t);   /* must not hang: a lock left behind is taken over */
        CHECK_EQ(used_slots(t), 0);
    }
    printf("alloc_table: %d processes killed at random points; %llu lock takeovers, %llu rebuilds\n", rounds,
           (unsigned long long)t->h.takeovers, (unsigned long long)t->h.rebuilds);
    ito__table_close(t);
}

static void garbage(void)
{
    struct ito__table *t = open_table();
    int slot;
    uint64_t serial;
    struct ito__table_hints me = hints(ITO__ALLOC_MAX_CPUS, 0);
    uint64_t seed = 7;
    int rounds = (int)test_scaled(200);
    for (int r = 0; r < rounds; r++) {
        OK(ito__table_join(t, &me, &slot, &serial));
        unsigned char *p = (unsigned char *)t;
        switch (r % 4) {
        case 0:   /* everything, lock word included */
            for (size_t i = 0; i < sizeof *t; i++)
                p[i] = (unsigned char)test_rand(&seed);
            break;
        case 1:   /* the slots only */
            for (size_t i = sizeof t->h; i < sizeof *t; i++)
                p[i] = (unsigned char)test_rand(&seed);
            break;
        case 2: {   /* plausible values in our own slot */
            struct ito__table_slot *s = &t->slot[slot];
            s->want = (int32_t)test_rand(&seed);
            s->priority = (int32_t)(test_rand(&seed) % 100) - 50;
            s->ngrant = (int32_t)(test_rand(&seed) % 3);
            for (int w = 0; w < ITO__CPUMASK_WORDS; w++)
                s->grant.w[w] = test_rand(&seed);
            break;
        }
        default:   /* a few bytes anywhere */
            for (int k = 0; k < 8; k++)
                p[test_rand(&seed) % sizeof *t] = (unsigned char)test_rand(&seed);
            break;
        }
        /* Whatever we find: our grant is inside the online processors and
         * not empty, or our slot is gone and we join again. */
        ito__cpumask m;
        uint32_t gen;
        int e = ito__table_grant(t, slot, serial, &m, &gen, NULL);
        if (e == ESRCH) {
            OK(ito__table_join(t, &me, &slot, &serial));
            OK(ito__table_grant(t, slot, serial, &m, &gen, NULL));
        } else {
            OK(e);
        }
        int n = ito__cpumask_count(&m);
        CHECK(n >= 1 && n <= ITO__ALLOC_MAX_CPUS);
        ito__cpumask inside;
        ito__cpumask_and(&inside, &m, &t->h.online);
        CHECK(ito__cpumask_equal(&inside, &m));
        ito__table_leave(t, slot, serial);
    }
    printf("alloc_table: %d rounds of garbage survived\n", rounds);

    /* A header of another layout version is rebuilt, not trusted. */
    ito__table_lock(t);
    ito__table_unlock(t);
    uint64_t rebuilds = t->h.rebuilds;
    t->h.version = ITO__ALLOC_VERSION + 1;
    CHECK(ito__table_lock(t));
    ito__table_unlock(t);
    CHECK_EQ(t->h.version, ITO__ALLOC_VERSION);
    CHECK(t->h.rebuilds >= 1);   /* its counters are not trusted either */
    (void)rebuilds;
    ito__table_close(t);
}

static void two_users(void)
{
    if (geteuid() != 0) {
        printf("alloc_table: not root: two users' segments not tested\n");
        return;
    }
    char mine[192], theirs[192];
    ito__table_path(NULL, mine, sizeof mine);
    /* Another user's process uses another segment, and cannot open ours. */
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0);
        ito__table_path(NULL, theirs, sizeof theirs);
        struct ito__table *t;
        int e = ito__table_open(name, &t);   /* ours: mode 0600, root's */
        CHECK(write(p[1], theirs, sizeof theirs) == (ssize_t)sizeof theirs);
        CHECK(write(p[1], &e, sizeof e) == (ssize_t)sizeof e);
        _exit(0);
    }
    close(p[1]);
    int e = 0;
    CHECK(read(p[0], theirs, sizeof theirs) == (ssize_t)sizeof theirs);
    CHECK(read(p[0], &e, sizeof e) == (ssize_t)sizeof e);
    reap(pid, false);
    CHECK(strcmp(mine, theirs) != 0);
    CHECK_EQ(e, EACCES);

    /* A segment under our name that another user created is refused. */
    char planted[64];
    snprintf(planted, sizeof planted, "/dev/shm/ito-test-planted-%d", (int)getpid());
    int fd = open(planted, O_RDWR | O_CREAT | O_EXCL, 0666);
    CHECK(fd >= 0);
    CHECK(fchown(fd, 65534, 65534) == 0);
    close(fd);
    struct ito__table *t;
    CHECK_EQ(ito__table_open(planted, &t), EACCES);
    unlink(planted);
    printf("alloc_table: two users: %s and %s kept apart\n", mine, theirs);

    /* Squatting: another user creates a user's table in /dev/shm first.
     * With a runtime directory, the user's table is there, out of reach. */
    char run[64], squat[96];
    snprintf(run, sizeof run, "/run/user/%d", 65534);
    snprintf(squat, sizeof squat, "/dev/shm/ito-alloc-%d-v%d", 65534, ITO__ALLOC_VERSION);
    bool squatted = (fd = open(squat, O_RDWR | O_CREAT | O_EXCL, 0600)) >= 0;   /* root's */
    if (fd >= 0)
        close(fd);
    struct stat rs;
    if (squatted && stat(run, &rs) != 0) {
        /* No runtime directory: the user's processes run without sharing,
         * and say why. */
        int e[2];
        CHECK(pipe(e) == 0);
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0);
            unsetenv("ITO_ALLOC_DOMAIN");
            dup2(e[1], 2);
            OK(ito_init(NULL));
            ito_alloc_info_t ai;
            OK(ito_alloc_info(&ai));
            _exit(ai.enabled ? 1 : 0);
        }
        close(e[1]);
        static char err[4096];
        ssize_t n, k = 0;
        while ((n = read(e[0], err + k, sizeof err - 1 - (size_t)k)) > 0)
            k += n;
        err[k] = '\0';
        close(e[0]);
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(err, "another user (uid 0) created it first")) {
            fprintf(stderr, "a squatted table: status %d, stderr:\n%s\n", st, err);
            exit(1);
        }
        printf("alloc_table: a table squatted in /dev/shm, no runtime directory: said, no sharing\n");
    }
    bool made_run = mkdir(run, 0700) == 0;
    if (!made_run && errno != EEXIST) {
        printf("alloc_table: no %s (%s): squatting not tested\n", run, strerror(errno));
        if (squatted)
            unlink(squat);
        return;
    }
    CHECK(chown(run, 65534, 65534) == 0 && chmod(run, 0700) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0);
        ito__table_path(NULL, theirs, sizeof theirs);
        CHECK(!strncmp(theirs, "/run/user/65534/", 16));
        OK(ito__table_open(NULL, &t));
        CHECK(ito__table_lock(t) || true);
        ito__table_unlock(t);
        CHECK(unlink(theirs) == 0);
        _exit(0);
    }
    reap(pid, false);
    if (squatted)
        unlink(squat);
    if (made_run)
        CHECK(rmdir(run) == 0);
    printf("alloc_table: a table squatted in /dev/shm: the user's is in %s, out of reach\n", run);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(name, sizeof name, "/dev/shm/ito-test-alloc-%d", (int)getpid());
    unlink(name);
    join_leave_demand();
    killed_holding_lock();
    garbage();
    two_users();
    /* The segment is created 0600. */
    int fd = open(name, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    close(fd);
    unlink(name);
    return 0;
}
