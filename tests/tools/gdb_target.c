/* SPDX-License-Identifier: MIT */
/* A program for the gdb-extension checks (gdb_tools.sh, gdb_installed.sh):
 * ito threads stopped in known places, each in a function of its own (the
 * line marked "at: <thread name>"), then "ready" on stdout, and it waits to
 * be inspected.
 *
 *   owner          holds mutex m, waits on semaphore s
 *   locker         waits on mutex m (held by owner)
 *   the-waiter     waits on condition c
 *   sleeper        sleeps
 *   joiner         joins sleeper (a thread that has started: an ordinary join)
 *   inline-joiner  joins inline-child before it starts, so the child runs
 *                  on the joiner's stack (src/runtime/inline.c) and sleeps
 *   spinner-a/-b   compute for ever: one RUNNING, the other READY, preempted
 *                  (switched out from the time slice's signal handler)
 *   main           in pause(), bracketed (RUNNING, in a kernel call)
 *
 * Run it with ITO_VPROCS=1: with one vproc nobody can take inline-child
 * from the queue between its spawn and the join, so the join is inline. */
#include <unistd.h>

#include <ito.h>

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;
static ito_sem_t s;
static ito_thread_t sleeper_t;
static volatile int there;   /* threads that reached the line before their wait */
static volatile unsigned long spins[2];

static void arrive(void) { __atomic_add_fetch(&there, 1, __ATOMIC_SEQ_CST); }

static void *owner(void *a)
{
    ito_mutex_lock(&m);
    arrive();
    ito_sem_wait(&s);   /* at: owner (holding m) */
    ito_mutex_unlock(&m);
    return a;
}

static void *locker(void *a)
{
    arrive();
    ito_mutex_lock(&m);   /* at: locker */
    ito_mutex_unlock(&m);
    return a;
}

static void *cond_waiter(void *a)
{
    static ito_mutex_t cm = ITO_MUTEX_INIT;
    ito_mutex_lock(&cm);
    arrive();
    ito_cond_wait(&c, &cm);   /* at: the-waiter */
    ito_mutex_unlock(&cm);
    return a;
}

static void *sleeper(void *a)
{
    arrive();
    ito_sleep_ns(3600ull * 1000000000ull);   /* at: sleeper */
    return a;
}

static void *joiner(void *a)
{
    arrive();
    ito_join(sleeper_t, NULL);   /* at: joiner */
    return a;
}

static void *inline_child(void *a)
{
    arrive();
    ito_sleep_ns(3600ull * 1000000000ull);   /* at: inline-child */
    return a;
}

static void *inline_joiner(void *a)
{
    ito_attr_t at;
    ito_attr_init(&at);
    ito_attr_set_name(&at, "inline-child");
    ito_attr_set_stack_size(&at, 64 * 1024);
    ito_thread_t t;
    ito_spawn(&t, &at, inline_child, NULL);
    ito_join(t, NULL);   /* at: inline-joiner */
    return a;
}

static void *spinner(void *a)
{
    for (;;)
        spins[(long)a]++;   /* at: spinner */
    return a;
}

static void spawn(const char *name, void *(*fn)(void *), size_t stack, ito_thread_t *out)
{
    ito_attr_t at;
    ito_attr_init(&at);
    ito_attr_set_name(&at, name);
    if (stack)
        ito_attr_set_stack_size(&at, stack);
    ito_thread_t t;
    ito_spawn(out ? out : &t, &at, fn, NULL);
    int want = there + 1;
    while (there < want)
        ito_sleep_ns(1000000);
}

int main(void)
{
    ito_sem_init(&s, 0);
    spawn("owner", owner, 0, NULL);
    spawn("locker", locker, 0, NULL);
    spawn("the-waiter", cond_waiter, 0, NULL);
    spawn("sleeper", sleeper, 0, &sleeper_t);
    spawn("joiner", joiner, 0, NULL);
    spawn("inline-joiner", inline_joiner, 1024 * 1024, NULL);   /* room for its child */
    ito_sleep_ns(100000000);   /* let the last ones park */
    ito_attr_t at;
    ito_attr_init(&at);
    ito_thread_t t;
    ito_attr_set_name(&at, "spinner-a");
    ito_spawn(&t, &at, spinner, (void *)0);
    ito_attr_set_name(&at, "spinner-b");
    ito_spawn(&t, &at, spinner, (void *)1);
    while (spins[0] == 0 || spins[1] == 0)   /* both have run: one was preempted */
        ito_sleep_ns(1000000);
    write(1, "ready\n", 6);
    for (;;) {
        ito_blocking_begin();
        pause();   /* at: main */
        ito_blocking_end();
    }
    return 0;
}
