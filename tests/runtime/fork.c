/* SPDX-License-Identifier: MIT */
/* fork() in a process running ito threads: the child is a working ito
 * process whose one thread is the one that forked (runtime/fork.c). Each
 * case forks while threads of the parent run, compute, or wait; the child
 * checks what it can and reports by its exit status (a hang guard: alarm).
 * The parent's threads must be untouched by it. */
#include "common.h"

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>

enum { VPROCS = 4, RUNNERS = 100 };

static atomic_int stop;
static ito_thread_t runners[RUNNERS];
static cpu_set_t initial_cpus;   /* the process's affinity before ito pinned anything */

static void *runner(void *a)
{
    /* Computing (yields), sleeping and switching all along. */
    for (uintptr_t i = (uintptr_t)a; !atomic_load(&stop); i++) {
        if (i % 64 == 0)
            ito_sleep_ns(100000);
        else
            ito_yield();
    }
    return NULL;
}

static void *square(void *a)
{
    long x = (long)(intptr_t)a;
    ito_yield();
    return (void *)(intptr_t)(x * x);
}

/* In a child: spawn and join n threads; 0 if their results are right. */
static int spawn_join(long n)
{
    ito_thread_t t[64];
    long sum = 0, want = 0;
    for (long i = 0; i < n; i++) {
        if (ito_spawn(&t[i], NULL, square, (void *)(intptr_t)i) != 0)
            return 1;
        want += i * i;
    }
    for (long i = 0; i < n; i++) {
        void *r;
        if (ito_join(t[i], &r) != 0)
            return 2;
        sum += (long)(intptr_t)r;
    }
    return sum == want ? 0 : 3;
}

/* The child's status must be 0. */
static void reap(pid_t pid, const char *what)
{
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char sb[128];
        fprintf(stderr, "%s: child %s\n", what, test_status_str(st, sb, sizeof sb));
        abort();
    }
}

/* ---- the child works: threads, joins, sync objects, sleeps, I/O ---- */

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;
static int turn;

static void *pong(void *a)
{
    (void)a;
    for (int i = 0; i < 100; i++) {
        ito_mutex_lock(&m);
        while (turn != 1)
            ito_cond_wait(&c, &m);
        turn = 0;
        ito_cond_signal(&c);
        ito_mutex_unlock(&m);
    }
    return NULL;
}

static void *echo(void *a)
{
    int *fd = a;   /* read fd[0], write back on fd[3] */
    char buf[16];
    ssize_t n = ito_read(fd[0], buf, sizeof buf);
    if (n > 0 && ito_write(fd[3], buf, (size_t)n) == n)
        return (void *)1;
    return NULL;
}

static int child_works(void)
{
    alarm(20);
    if (ito_vproc_count() != VPROCS)
        return 10;
    int e = spawn_join(50);
    if (e)
        return e;
    /* Parent's threads do not exist here. */
    if (ito_join(runners[0], NULL) != ESRCH || ito_detach(runners[1]) != ESRCH)
        return 11;
    /* Condition variable ping-pong with a thread of the child. */
    ito_thread_t p;
    if (ito_spawn(&p, NULL, pong, NULL))
        return 12;
    for (int i = 0; i < 100; i++) {
        ito_mutex_lock(&m);
        turn = 1;
        ito_cond_signal(&c);
        while (turn != 0)
            ito_cond_wait(&c, &m);
        ito_mutex_unlock(&m);
    }
    if (ito_join(p, NULL))
        return 13;
    /* Timers and the I/O rings. */
    uint64_t t0 = ito_now_ns();
    ito_sleep_ns(2000000);
    if (ito_now_ns() - t0 < 2000000)
        return 14;
    int fd[4];
    if (pipe(fd) || pipe(fd + 2))
        return 15;
    ito_thread_t r;
    if (ito_spawn(&r, NULL, echo, fd))
        return 16;
    char buf[8] = { 0 };
    if (ito_write(fd[1], "ping", 4) != 4 || ito_read(fd[2], buf, sizeof buf) != 4 || strcmp(buf, "ping"))
        return 17;
    void *ok;
    if (ito_join(r, &ok) || !ok)
        return 18;
    return 0;
}

static void child_works_after_fork_from_main(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child_works());
    reap(pid, "child_works_after_fork_from_main");
}

static void *fork_here(void *a)
{
    ito_thread_t *me = a;
    *me = ito_self();
    errno = 4321;
    pid_t pid = fork();
    if (pid == 0) {
        if (errno != 4321)
            _exit(20);
        if (ito_self().id != me->id)
            _exit(21);   /* the forking thread keeps its identity */
        _exit(child_works());
    }
    return (void *)(intptr_t)pid;
}

static void child_works_after_fork_from_thread(void)
{
    ito_thread_t t, me;
    OK(ito_spawn(&t, NULL, fork_here, &me));
    void *pid;
    OK(ito_join(t, &pid));
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "child_works_after_fork_from_thread");
}

/* ---- the parent's waiting threads never run in the child ---- */

static ito_mutex_t wm = ITO_MUTEX_INIT;
static ito_cond_t wc = ITO_COND_INIT;
static ito_sem_t ws;
static bool go;
static atomic_int woke;

static void *cond_waiter(void *a)
{
    (void)a;
    ito_mutex_lock(&wm);
    while (!go)
        ito_cond_wait(&wc, &wm);
    ito_mutex_unlock(&wm);
    atomic_fetch_add(&woke, 1);
    return NULL;
}

static void *sem_waiter(void *a)
{
    (void)a;
    ito_sem_wait(&ws);
    atomic_fetch_add(&woke, 1);
    return NULL;
}

/* In the child: a thread of its own waits behind the parent's. */
static bool go_child;
static atomic_int child_woke;

static void *child_cond_waiter(void *a)
{
    (void)a;
    ito_mutex_lock(&wm);
    while (!go_child)
        ito_cond_wait(&wc, &wm);
    ito_mutex_unlock(&wm);
    atomic_fetch_add(&child_woke, 1);
    return NULL;
}

static void *child_sem_waiter(void *a)
{
    (void)a;
    ito_sem_wait(&ws);
    atomic_fetch_add(&child_woke, 1);
    return NULL;
}

static void parent_waiters_stay_in_parent(void)
{
    OK(ito_sem_init(&ws, 0));
    ito_thread_t cw, sw;
    OK(ito_spawn(&cw, NULL, cond_waiter, NULL));
    OK(ito_spawn(&sw, NULL, sem_waiter, NULL));
    ito_sleep_ns(20000000);   /* both wait */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20);
        /* One signal, one post: they go to the child's own waiters, queued
         * behind the parent's. */
        ito_thread_t ccw, csw;
        if (ito_spawn(&ccw, NULL, child_cond_waiter, NULL) || ito_spawn(&csw, NULL, child_sem_waiter, NULL))
            _exit(32);
        ito_sleep_ns(20000000);
        ito_mutex_lock(&wm);
        go_child = true;
        ito_cond_signal(&wc);
        ito_mutex_unlock(&wm);
        ito_sem_post(&ws);
        if (ito_join(ccw, NULL) || ito_join(csw, NULL) || atomic_load(&child_woke) != 2)
            _exit(33);
        /* And a broadcast wakes no thread of the parent's. */
        ito_mutex_lock(&wm);
        go = true;
        ito_cond_broadcast(&wc);
        ito_mutex_unlock(&wm);
        ito_sem_post(&ws);
        ito_sleep_ns(50000000);
        if (atomic_load(&woke) != 0)
            _exit(30);   /* a thread of the parent's ran here */
        if (ito_join(cw, NULL) != ESRCH)
            _exit(31);
        _exit(spawn_join(10));
    }
    reap(pid, "parent_waiters_stay_in_parent");
    CHECK_EQ(atomic_load(&woke), 0);
    ito_mutex_lock(&wm);
    go = true;
    ito_cond_broadcast(&wc);
    ito_mutex_unlock(&wm);
    OK(ito_sem_post(&ws));
    OK(ito_join(cw, NULL));
    OK(ito_join(sw, NULL));
    CHECK_EQ(atomic_load(&woke), 2);
    OK(ito_sem_destroy(&ws));
}

/* ---- the forking thread's ito_exit ends the child's process ---- */

static int exit_pipe[2];

static void *late_writer(void *a)
{
    (void)a;
    ito_sleep_ns(20000000);
    char b = 'x';
    return (void *)(intptr_t)(ito_write(exit_pipe[1], &b, 1) == 1);
}

static void *fork_then_exit(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        ito_attr_t at;
        ito_attr_init(&at);
        ito_attr_set_detached(&at, true);
        for (int i = 0; i < 4; i++)
            if (ito_spawn(NULL, &at, late_writer, NULL))
                _exit(40);
        ito_exit(NULL);   /* the child's last thread: exit status 0 once the writers are done */
        _exit(41);
    }
    return (void *)(intptr_t)pid;
}

static void child_exit_ends_process(void)
{
    CHECK(pipe(exit_pipe) == 0);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, fork_then_exit, NULL));
    void *pid;
    OK(ito_join(t, &pid));
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "child_exit_ends_process");
    close(exit_pipe[1]);
    char buf[8];
    ssize_t n, got = 0;
    while ((n = read(exit_pipe[0], buf, sizeof buf)) > 0)
        got += n;
    CHECK_EQ(got, (ssize_t)4);
    close(exit_pipe[0]);
}

/* ---- a fork inside ito_blocking_begin/end ---- */

static void *fork_bracketed(void *a)
{
    (void)a;
    ito_blocking_begin();
    pid_t pid = fork();
    ito_blocking_end();
    if (pid == 0)
        _exit(spawn_join(20));
    return (void *)(intptr_t)pid;
}

static void fork_in_bracket(void)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, fork_bracketed, NULL));
    void *pid;
    OK(ito_join(t, &pid));
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "fork_in_bracket");
}

/* ---- grandchildren: before and after the child's runtime resumed ---- */

static int grandchild(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return 50;
    if (pid == 0)
        _exit(spawn_join(10));
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 51;
    return 0;
}

static void grandchildren(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(20);
        int e = grandchild();   /* no ito call yet in this child */
        if (!e)
            e = spawn_join(10);
        if (!e) {
            /* Let the kernel threads the resumed runtime started finish
             * starting: under ASan (GCC 12), whose allocator is not locked
             * around fork, a fork while one of them allocates leaves the
             * lock held in the grandchild, whose first malloc (in ito's
             * child handler) then waits for ever; glibc's malloc is safe. */
            usleep(100000);
            e = grandchild();   /* after it resumed */
        }
        _exit(e);
    }
    reap(pid, "grandchildren");
}

/* ---- a child that only execs gets the process's CPUs ---- */

static void *exec_child(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t s;
        if (sched_getaffinity(0, sizeof s, &s) || !CPU_EQUAL(&s, &initial_cpus))
            _exit(60);
        execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
        _exit(61);
    }
    return (void *)(intptr_t)pid;
}

static void exec_gets_process_cpus(void)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, exec_child, NULL));
    void *pid;
    OK(ito_join(t, &pid));
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "exec_gets_process_cpus");
}

/* ---- a kernel thread that ito did not create forks ---- */

static void *foreign_forker(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        if (ito_self().id != ITO_THREAD_NULL.id)
            _exit(70);   /* still not an ito thread */
        _exit(spawn_join(20));   /* every vproc gets an activation now */
    }
    return (void *)(intptr_t)pid;
}

static void foreign_thread_forks(void)
{
    pthread_t p;
    OK(pthread_create(&p, NULL, foreign_forker, NULL));
    void *pid;
    OK(pthread_join(p, &pid));
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "foreign_thread_forks");
}

/* ---- a thread that forks while it runs inline on its joiner's stack ---- */

static pid_t parent_pid;

static void *forks_and_returns(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0)
        return NULL;   /* the child's one thread ends: its process exits 0 */
    return (void *)(intptr_t)pid;
}

static void inline_joined_thread_forks(void)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, forks_and_returns, NULL));
    void *pid;
    OK(ito_join(t, &pid));   /* not started yet: may run right here, on this stack */
    if (getpid() != parent_pid)
        _exit(80);   /* the joiner, a thread of the parent's, ran in the child */
    CHECK((intptr_t)pid > 0);
    reap((pid_t)(intptr_t)pid, "inline_joined_thread_forks");
}

/* ---- a kernel thread of the parent's waited on an object the child uses ---- */

static ito_mutex_t fm = ITO_MUTEX_INIT;
static atomic_int foreign_locked;

static void *foreign_locker(void *a)
{
    (void)a;
    atomic_store(&foreign_locked, 1);
    ito_mutex_lock(&fm);   /* waits: the forking thread holds it */
    ito_mutex_unlock(&fm);
    return NULL;
}

static void *child_locker(void *a)
{
    (void)a;
    ito_mutex_lock(&fm);
    ito_mutex_unlock(&fm);
    return NULL;
}

static void *holds_and_forks(void *a)
{
    (void)a;
    ito_mutex_lock(&fm);
    pthread_t f;
    OK(pthread_create(&f, NULL, foreign_locker, NULL));
    while (!atomic_load(&foreign_locked))
        ito_sleep_ns(1000000);
    ito_sleep_ns(30000000);   /* it waits in the mutex's queue now */
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        ito_thread_t c;
        if (ito_spawn(&c, NULL, child_locker, NULL))
            _exit(90);
        ito_sleep_ns(30000000);   /* queued behind the parent's kernel thread */
        ito_mutex_unlock(&fm);   /* goes to the child's own thread */
        _exit(ito_join(c, NULL) ? 91 : 0);
    }
    ito_mutex_unlock(&fm);
    OK(pthread_join(f, NULL));
    return (void *)(intptr_t)pid;
}

static void parent_kernel_thread_waiter_skipped(void)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, holds_and_forks, NULL));
    void *pid;
    OK(ito_join(t, &pid));
    reap((pid_t)(intptr_t)pid, "parent_kernel_thread_waiter_skipped");
}

/* ---- a child handler registered before ito started calls ito ---- */

static atomic_bool spawn_in_child;

static void child_handler_spawns(void)
{
    if (atomic_load(&spawn_in_child) && spawn_join(3) != 0)
        _exit(95);
}

static void *forks_plainly(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    return (void *)(intptr_t)pid;
}

static void early_child_handler_uses_ito(void)
{
    atomic_store(&spawn_in_child, true);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, forks_plainly, NULL));
    void *pid;
    OK(ito_join(t, &pid));
    reap((pid_t)(intptr_t)pid, "early_child_handler_uses_ito");
    atomic_store(&spawn_in_child, false);
}

/* ---- many forks, from changing threads, while threads come and go ---- */

static void *churn(void *a)
{
    (void)a;
    while (!atomic_load(&stop)) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, square, (void *)3));
        OK(ito_join(t, NULL));
    }
    return NULL;
}

static void *fork_and_reap(void *a)
{
    (void)a;
    pid_t pid = fork();
    if (pid == 0)
        _exit(spawn_join(2));
    reap(pid, "fork_many");
    return NULL;
}

static void fork_many(void)
{
    ito_thread_t ch[4];
    for (int i = 0; i < 4; i++)
        OK(ito_spawn(&ch[i], NULL, churn, NULL));
    long n = test_scaled(100);
    for (long i = 0; i < n; i++) {
        if (i % 2) {
            fork_and_reap(NULL);
        } else {
            ito_thread_t t;
            OK(ito_spawn(&t, NULL, fork_and_reap, NULL));
            OK(ito_join(t, NULL));
        }
    }
    atomic_store(&stop, 2);
    for (int i = 0; i < 4; i++)
        OK(ito_join(ch[i], NULL));
}

int main(void)
{
    CHECK(sched_getaffinity(0, sizeof initial_cpus, &initial_cpus) == 0);
    parent_pid = getpid();
    /* Before ito starts: ito's own handler (registered when the library was
     * loaded) still runs first, so this one finds a working runtime. */
    OK(pthread_atfork(NULL, NULL, child_handler_spawns));
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = VPROCS;
    OK(ito_init(&cfg));
    for (int i = 0; i < RUNNERS; i++)
        OK(ito_spawn(&runners[i], NULL, runner, (void *)(intptr_t)i));
    child_works_after_fork_from_main();
    child_works_after_fork_from_thread();
    parent_waiters_stay_in_parent();
    child_exit_ends_process();
    fork_in_bracket();
    grandchildren();
    exec_gets_process_cpus();
    foreign_thread_forks();
    inline_joined_thread_forks();
    parent_kernel_thread_waiter_skipped();
    early_child_handler_uses_ito();
    fork_many();   /* stops the runners too */
    for (int i = 0; i < RUNNERS; i++)
        OK(ito_join(runners[i], NULL));
    printf("fork: ok\n");
    return 0;
}
