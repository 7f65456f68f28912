/* SPDX-License-Identifier: MIT */
/* fork() in a process with threads.
 *
 * "A process shall be created with a single thread. If a multi-threaded
 * process calls fork(), the new process shall contain a replica of the
 * calling thread and its entire address space, possibly including the states
 * of mutexes and other resources." (fork). The child's one thread is the
 * caller: its pthread_self(), its thread-local storage and errno are the
 * caller's, and the parent's other threads never run in the child, not even
 * one that waited on a condition variable the child signals. The parent's
 * threads go on unaffected.
 *
 * pthread_atfork: "The parent and child fork handlers shall be called in the
 * order in which they were established by calls to pthread_atfork(). The
 * prepare fork handlers shall be called in the opposite order." "If no
 * handling is desired at one or more of these three points, the
 * corresponding fork handler address(es) may be set to NULL."
 *
 * pthread_exit: "The process shall exit with an exit status of 0 after the
 * last thread has been terminated." — in a child whose one thread was not
 * the parent's main thread, and that created threads of its own.
 *
 * A child that execs: "A child created via fork(2) inherits its parent's CPU
 * affinity mask. The affinity mask is preserved across an execve(2)."
 * (sched_setaffinity(2), Linux): the process's affinity, as main read it
 * before any thread, and its scheduling policy.
 *
 * Beyond POSIX, which promises the child of a multi-threaded process only
 * async-signal-safe calls until it execs: glibc's child is a whole process.
 * It creates and joins threads, uses stdio (glibc's fork takes the list of
 * streams and resets every stream's lock in the child, so a stream another
 * thread was writing at the fork is usable), and locks a mutex and
 * broadcasts a condition variable the parent's threads were using (the
 * parent's waiter does not exist in the child). These cases hold on glibc in
 * practice and are kept.
 *
 * Each case forks its own children; a child checks and reports by its exit
 * status (a failed CHECK aborts it), guarded against hanging by alarm(),
 * which a child does not inherit.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define CHILD_ALARM 10 /* seconds: a hung child is ended by SIGALRM */

static cpu_set_t start_affinity; /* main's, before any thread */
static int start_policy;
static atomic_bool stop;

static void *returns_arg(void *arg) { return arg; }

/* n threads wait for a start signal (mutex and condition variable), each
 * adds its number 1..n to a sum and says so; the caller waits until all
 * have, joins them and checks the sum. */
enum { MAX_ADDERS = 64 };

struct summing {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, done;
    long sum;
};

struct addend {
    struct summing *s;
    int n;
};

static void *adds(void *arg)
{
    struct addend *a = arg;
    struct summing *s = a->s;
    OK(pthread_mutex_lock(&s->mu));
    while (!s->go)
        OK(pthread_cond_wait(&s->cv, &s->mu));
    s->sum += a->n;
    s->done++;
    OK(pthread_cond_broadcast(&s->cv));
    OK(pthread_mutex_unlock(&s->mu));
    return (void *)(intptr_t)a->n;
}

static void sum_on_threads(int n)
{
    struct summing s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
    struct addend a[MAX_ADDERS];
    pthread_t t[MAX_ADDERS];
    CHECK(n <= MAX_ADDERS);
    for (int i = 0; i < n; i++) {
        a[i] = (struct addend){ &s, i + 1 };
        OK(pthread_create(&t[i], NULL, adds, &a[i]));
    }
    OK(pthread_mutex_lock(&s.mu));
    s.go = 1;
    OK(pthread_cond_broadcast(&s.cv));
    while (s.done < n)
        OK(pthread_cond_wait(&s.cv, &s.mu));
    OK(pthread_mutex_unlock(&s.mu));
    for (int i = 0; i < n; i++) {
        void *r;
        OK(pthread_join(t[i], &r));
        CHECK_EQ((intptr_t)r, i + 1);
    }
    CHECK_EQ(s.sum, (long)n * (n + 1) / 2);
}

/* ------------------------------------------------------------- cases */

/* ---- pthread_atfork handlers' order ---- */

/* Noted only while armed: the handlers stay registered for every later fork
 * of this program. Only the forking thread writes these. */
static atomic_bool atfork_armed;
static int atfork_seen[16];
static int atfork_n;

static void note(int what)
{
    if (atomic_load(&atfork_armed) && atfork_n < 16)
        atfork_seen[atfork_n++] = what;
}

#define HANDLERS(i)                                                                     \
    static void prepare##i(void) { note(10 + i); }                                      \
    static void parent##i(void) { note(20 + i); }                                       \
    static void child##i(void) { note(30 + i); }
HANDLERS(1)
HANDLERS(2)
HANDLERS(3)

static void check_seen(const int *want, int n)
{
    CHECK_EQ(atfork_n, n);
    for (int i = 0; i < n; i++)
        CHECK_EQ(atfork_seen[i], want[i]);
}

static void *forks_with_handlers(void *arg)
{
    atfork_n = 0;
    atomic_store(&atfork_armed, true);
    pid_t pid = conform_fork(CHILD_ALARM);
    atomic_store(&atfork_armed, false);
    if (pid == 0) {
        check_seen((const int[]){ 13, 12, 11, 31, 32, 33 }, 6);
        _exit(0);
    }
    check_seen((const int[]){ 13, 12, 11, 21, 22, 23 }, 6);
    conform_reap(pid, 0);
    return NULL;
}

static void atfork_handlers_order(void)
{
    OK(pthread_atfork(prepare1, parent1, child1));
    OK(pthread_atfork(NULL, NULL, NULL));
    OK(pthread_atfork(prepare2, parent2, child2));
    OK(pthread_atfork(prepare3, parent3, child3));
    forks_with_handlers(NULL);                   /* from main */
    CHECK_EQ(on_thread(forks_with_handlers, NULL), 0); /* from another thread */
}

/* ---- a thread forks while others run ---- */

enum { SPINNERS = 6, SLEEPERS = 2, CHILD_ADDERS = 50 };

static atomic_long spins[SPINNERS];
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int release, asleep;
} sleepers = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static _Thread_local long tls_value;
static pthread_t forker_self;
static int *forker_errno_at;
static long *forker_tls_at;

static void *spins_until_stop(void *arg)
{
    atomic_long *n = arg;
    while (!atomic_load(&stop)) {
        atomic_fetch_add(n, 1);
        sched_yield();
    }
    return NULL;
}

/* Waits on a condition variable nobody signals until the case ends. */
static void *sleeps(void *arg)
{
    OK(pthread_mutex_lock(&sleepers.mu));
    sleepers.asleep++;
    while (!sleepers.release)
        OK(pthread_cond_wait(&sleepers.cv, &sleepers.mu));
    sleepers.asleep--;
    OK(pthread_mutex_unlock(&sleepers.mu));
    return arg;
}

static long all_spins(void)
{
    long n = 0;
    for (int i = 0; i < SPINNERS; i++)
        n += atomic_load(&spins[i]);
    return n;
}

static void *forks_among_others(void *arg)
{
    tls_value = 4242;
    forker_self = pthread_self();
    forker_errno_at = &errno;
    forker_tls_at = &tls_value;
    errno = ENOTRECOVERABLE;
    pid_t pid = fork();
    int e = errno;
    if (pid == 0) {
        alarm(CHILD_ALARM);
        CHECK_EQ(e, ENOTRECOVERABLE);
        CHECK(pthread_equal(pthread_self(), forker_self));
        CHECK(&errno == forker_errno_at);
        CHECK(&tls_value == forker_tls_at);
        CHECK_EQ(tls_value, 4242);
        /* The parent's threads do not run here. */
        long before = all_spins();
        conform_pause_us(30000);
        CHECK_EQ(all_spins(), before);
        sum_on_threads(CHILD_ADDERS);
        CHECK(pthread_equal(pthread_self(), forker_self));
        CHECK_EQ(tls_value, 4242);
        CHECK_EQ(all_spins(), before);
        _exit(0);
    }
    CHECK(pid > 0);
    CHECK_EQ(e, ENOTRECOVERABLE);
    conform_reap(pid, 0);
    CHECK(pthread_equal(pthread_self(), forker_self));
    CHECK_EQ(tls_value, 4242);
    return NULL;
}

static int asleep(void)
{
    OK(pthread_mutex_lock(&sleepers.mu));
    int n = sleepers.asleep;
    OK(pthread_mutex_unlock(&sleepers.mu));
    return n;
}

static void fork_from_thread_with_others_running(void)
{
    atomic_store(&stop, false);
    pthread_t spinner[SPINNERS], sleeper[SLEEPERS], forker;
    for (int i = 0; i < SPINNERS; i++) {
        atomic_store(&spins[i], 0);
        OK(pthread_create(&spinner[i], NULL, spins_until_stop, &spins[i]));
    }
    for (int i = 0; i < SLEEPERS; i++)
        OK(pthread_create(&sleeper[i], NULL, sleeps, (void *)(intptr_t)(i + 1)));
    /* Each counts itself holding the mutex, which it lets go of only in
     * pthread_cond_wait. */
    WAIT_UNTIL(asleep() == SLEEPERS, 5000);
    WAIT_UNTIL(all_spins() >= SPINNERS * 100, 5000);

    OK(pthread_create(&forker, NULL, forks_among_others, NULL));
    OK(pthread_join(forker, NULL));

    /* The parent's threads go on. */
    long after[SPINNERS];
    for (int i = 0; i < SPINNERS; i++)
        after[i] = atomic_load(&spins[i]);
    for (int i = 0; i < SPINNERS; i++)
        WAIT_UNTIL(atomic_load(&spins[i]) > after[i] + 10, 5000);
    CHECK_EQ(asleep(), SLEEPERS);
    atomic_store(&stop, true);
    for (int i = 0; i < SPINNERS; i++)
        OK(pthread_join(spinner[i], NULL));
    OK(pthread_mutex_lock(&sleepers.mu));
    sleepers.release = 1;
    OK(pthread_cond_broadcast(&sleepers.cv));
    OK(pthread_mutex_unlock(&sleepers.mu));
    for (int i = 0; i < SLEEPERS; i++) {
        void *r;
        OK(pthread_join(sleeper[i], &r));
        CHECK_EQ((intptr_t)r, i + 1);
    }
    CHECK_EQ(sleepers.asleep, 0);
}

/* ---- the child uses a mutex and a condition variable a parent's thread
 * waits on ---- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, waiting;
    atomic_int woke;
} held = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };

static void *waits_for_go(void *arg)
{
    OK(pthread_mutex_lock(&held.mu));
    held.waiting = 1;
    while (!held.go)
        OK(pthread_cond_wait(&held.cv, &held.mu));
    atomic_store(&held.woke, 1);
    OK(pthread_mutex_unlock(&held.mu));
    return NULL;
}

static int is_waiting(void)
{
    OK(pthread_mutex_lock(&held.mu));
    int w = held.waiting;
    OK(pthread_mutex_unlock(&held.mu));
    return w;
}

static void *locks_held(void *arg)
{
    OK(pthread_mutex_lock(&held.mu));
    CHECK_EQ(held.go, 1); /* the child's */
    OK(pthread_cond_broadcast(&held.cv));
    OK(pthread_mutex_unlock(&held.mu));
    return arg;
}

static void child_uses_parent_objects(void)
{
    pthread_t w;
    OK(pthread_create(&w, NULL, waits_for_go, NULL));
    /* It says so holding the mutex, and lets go of it only in
     * pthread_cond_wait. */
    WAIT_UNTIL(is_waiting(), 5000);
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        OK(pthread_mutex_lock(&held.mu));
        held.go = 1;
        OK(pthread_cond_broadcast(&held.cv));
        OK(pthread_mutex_unlock(&held.mu));
        conform_pause_us(50000);
        CHECK_EQ(atomic_load(&held.woke), 0); /* the parent's waiter is not here */
        CHECK_EQ(on_thread(locks_held, (void *)7), 7);
        conform_pause_us(10000);
        CHECK_EQ(atomic_load(&held.woke), 0);
        _exit(0);
    }
    conform_reap(pid, 0);
    CHECK_EQ(atomic_load(&held.woke), 0); /* nor woken here */
    CHECK(is_waiting());
    OK(pthread_mutex_lock(&held.mu));
    held.go = 1;
    OK(pthread_cond_broadcast(&held.cv));
    OK(pthread_mutex_unlock(&held.mu));
    OK(pthread_join(w, NULL));
    CHECK_EQ(atomic_load(&held.woke), 1);
}

/* ---- pthread_exit of the child's one thread ---- */

enum { LATE_WRITERS = 4 };
static int late_fd;

static void *writes_later(void *arg)
{
    conform_pause_us(20000);
    CHECK_EQ(write(late_fd, "x", 1), 1);
    return NULL;
}

static void *forks_then_exits(void *arg)
{
    int p[2];
    CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        close(p[0]);
        late_fd = p[1];
        for (int i = 0; i < LATE_WRITERS; i++) {
            pthread_t t;
            OK(pthread_create(&t, NULL, writes_later, NULL));
        }
        pthread_exit(NULL); /* the process ends with status 0 after the last */
    }
    close(p[1]);
    conform_reap(pid, 0);
    char buf[16];
    size_t got = 0;
    ssize_t r;
    while ((r = read(p[0], buf + got, sizeof buf - got)) > 0)
        got += (size_t)r;
    CHECK_EQ(r, 0);
    CHECK_EQ(got, LATE_WRITERS);
    close(p[0]);
    return NULL;
}

static void pthread_exit_in_child_ends_process(void)
{
    CHECK_EQ(on_thread(forks_then_exits, NULL), 0);
}

/* ---- stdio in the child ---- */

enum { PRINTERS = 3, STDIO_FORKS = 20 };
static FILE *devnull;

static void *prints(void *arg)
{
    for (long n = 0; !atomic_load(&stop); n++) {
        CHECK(fprintf(devnull, "line %ld of printer %d\n", n, (int)(intptr_t)arg) > 0);
        CHECK(fputs("and one more\n", devnull) >= 0);
        if (n % 64 == 0)
            sched_yield();
    }
    return NULL;
}

static void stdio_in_child(void)
{
    atomic_store(&stop, false);
    devnull = fopen("/dev/null", "we");
    CHECK(devnull != NULL);
    CHECK_EQ(setvbuf(devnull, NULL, _IOLBF, 0), 0); /* a write(2) per line, under its lock */
    pthread_t t[PRINTERS];
    for (int i = 0; i < PRINTERS; i++)
        OK(pthread_create(&t[i], NULL, prints, (void *)(intptr_t)i));
    for (int k = 0; k < STDIO_FORKS; k++) {
        int p[2];
        CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = conform_fork(CHILD_ALARM);
        if (pid == 0) {
            close(p[0]);
            CHECK(fprintf(devnull, "the child writes too\n") > 0); /* the threads' stream */
            CHECK_EQ(fflush(devnull), 0);
            FILE *f = fdopen(p[1], "w");
            CHECK(f != NULL);
            CHECK(fprintf(f, "child %d of round %d says hello\n", (int)getpid(), k) > 0);
            CHECK_EQ(fflush(f), 0);
            _exit(0);
        }
        close(p[1]);
        char want[128], got[128];
        snprintf(want, sizeof want, "child %d of round %d says hello\n", (int)pid, k);
        size_t n = 0;
        ssize_t r;
        while (n < sizeof got - 1 && (r = read(p[0], got + n, sizeof got - 1 - n)) > 0)
            n += (size_t)r;
        got[n] = 0;
        close(p[0]);
        conform_reap(pid, 0);
        if (strcmp(got, want) != 0)
            fprintf(stderr, "[%s] read \"%s\", want \"%s\"\n", conform_case, got, want);
        CHECK(strcmp(got, want) == 0);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < PRINTERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(fclose(devnull), 0);
}

/* ---- many forks, from main and from a thread, while threads come and go ---- */

enum { FORKS = 100, CHURNERS = 4 };
static struct sync fork_asked, fork_done;
static atomic_long churned;

static void fork_one(void)
{
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        sum_on_threads(2);
        _exit(0);
    }
    conform_reap(pid, 0);
}

static void *forks_when_asked(void *arg)
{
    for (int i = 1; i <= FORKS / 2; i++) {
        sync_wait(&fork_asked, i);
        fork_one();
        sync_add(&fork_done, 1);
    }
    return NULL;
}

static void *churns(void *arg)
{
    while (!atomic_load(&stop)) {
        pthread_t t;
        void *r;
        OK(pthread_create(&t, NULL, returns_arg, arg));
        OK(pthread_join(t, &r));
        CHECK(r == arg);
        atomic_fetch_add(&churned, 1);
    }
    return NULL;
}

static void fork_many(void)
{
    atomic_store(&stop, false);
    atomic_store(&churned, 0);
    sync_init(&fork_asked);
    sync_init(&fork_done);
    pthread_t churner[CHURNERS], worker;
    for (int i = 0; i < CHURNERS; i++)
        OK(pthread_create(&churner[i], NULL, churns, (void *)(intptr_t)(i + 1)));
    OK(pthread_create(&worker, NULL, forks_when_asked, NULL));
    for (int i = 0; i < FORKS / 2; i++) {
        fork_one(); /* main */
        sync_add(&fork_asked, 1);
        sync_wait(&fork_done, i + 1); /* the worker */
    }
    OK(pthread_join(worker, NULL));
    WAIT_UNTIL(atomic_load(&churned) > 0, 5000);
    atomic_store(&stop, true);
    for (int i = 0; i < CHURNERS; i++)
        OK(pthread_join(churner[i], NULL));
    sync_destroy(&fork_asked);
    sync_destroy(&fork_done);
}

/* ---- fork, then exec ---- */

enum { EXECERS = 4 };

/* The child has the process's affinity and policy, then execs argv; its
 * status must be `want`. */
struct exec_job {
    const char *const *argv;
    int want;
};

static void *forks_and_execs(void *arg)
{
    const struct exec_job *job = arg;
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        cpu_set_t now;
        CPU_ZERO(&now);
        CHECK_EQ(sched_getaffinity(0, sizeof now, &now), 0);
        if (!CPU_EQUAL(&now, &start_affinity))
            fprintf(stderr, "[%s] child's affinity: %d CPUs, the process's: %d\n", conform_case,
                    CPU_COUNT(&now), CPU_COUNT(&start_affinity));
        CHECK(CPU_EQUAL(&now, &start_affinity));
        CHECK_EQ(sched_getscheduler(0), start_policy);
        execv(job->argv[0], (char *const *)job->argv);
        fprintf(stderr, "[%s] cannot exec %s: %s\n", conform_case, job->argv[0], strerror(errno));
        _exit(127);
    }
    conform_reap(pid, job->want);
    return NULL;
}

static void fork_then_exec(void)
{
    static const char *const true_argv[] = { "/bin/true", NULL };
    static const char *const sh_argv[] = { "/bin/sh", "-c", "exit 3", NULL };
    const struct exec_job yes = { true_argv, 0 }, three = { sh_argv, 3 };
    pthread_t t[EXECERS];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < EXECERS; i++)
            OK(pthread_create(&t[i], NULL, forks_and_execs, (void *)(i % 2 ? &three : &yes)));
        for (int i = 0; i < EXECERS; i++)
            OK(pthread_join(t[i], NULL));
    }
    forks_and_execs((void *)&yes); /* from main */
}

int main(void)
{
    CPU_ZERO(&start_affinity);
    CHECK_EQ(sched_getaffinity(0, sizeof start_affinity, &start_affinity), 0);
    start_policy = sched_getscheduler(0);
    CHECK(start_policy >= 0);

    RUN_CASE(atfork_handlers_order, 20);
    RUN_CASE(fork_from_thread_with_others_running, 30);
    RUN_CASE(child_uses_parent_objects, 20);
    RUN_CASE(pthread_exit_in_child_ends_process, 20);
    RUN_CASE(stdio_in_child, 30);
    RUN_CASE(fork_many, 45);
    RUN_CASE(fork_then_exec, 30);
    return 0;
}
