/* SPDX-License-Identifier: MIT */
/* policy_rr: a scheduling policy of one's own (include/ito/policy.h; walked
 * through in docs/policies.md).
 *
 * "rr" is round robin with stealing. Each vproc keeps its ready threads in
 * one FIFO queue, so the threads of a vproc take turns in the order they
 * became ready, whatever the reason; an idle vproc takes the older half of
 * the longest queue it sees. "fifo" keeps the same order with one queue and
 * one lock for all vprocs; "ws" runs the thread made ready last first, which
 * suits fork/join and producer/consumer pairs better than arrival order.
 *
 * Synchronization. A queue is used by its owner (enqueue, pick, take, and
 * the end of a steal that queues stolen threads here) and by thieves (steal),
 * always under the queue's spinlock, and no op holds two queue locks at once.
 * `len` is written under the lock and read without it as a hint.
 *
 * The program registers "rr", initializes ito with it on two vprocs, runs a
 * fork/join tree, a semaphore ping-pong, a mutex workload that yields and
 * threads that compute without calling ito, checks their results and that
 * every thread handed to the policy came out again, and prints what the
 * policy did.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito.h>
#include <ito/policy.h>

#define RR_LINE 64          /* cache line: each vproc's queue on lines of its own */
#define RR_STEAL_MAX 128    /* threads taken by one steal, as ws does: bounds the walk under the lock */
#define RR_SPINS 1024       /* pauses of a lock waiter between two sched_yield (ws's thieves pause as long) */
#define RR_REASONS 7        /* ITO_READY_SPAWN (1) .. ITO_READY_DISPLACED (6) */
_Static_assert(ITO_READY_DISPLACED < RR_REASONS, "a counter per ready reason");

struct rr_queue {
    _Alignas(RR_LINE) atomic_int lock;     /* 0: free, 1: held */
    ito_policy_node_t *head, *tail;        /* lock; linked by next (towards the tail) and prev */
    atomic_long len;                       /* written under lock; read without it as a hint */
    /* What the policy did here: written by the owning vproc only, read by
     * main for the summary (relaxed: counts, no data hangs on them). */
    atomic_ulong reasons[RR_REASONS];      /* enqueues by reason; [0]: one this file does not know */
    atomic_ulong picked, taken, stolen, moved;
};

struct rr {
    int count;
    struct rr_queue q[];                   /* [count] */
};

static struct rr *rr_state;                /* set by rr_init; main reads the counters */

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Acquire pairs with the release in q_unlock of the previous holder, on
 * this or another vproc: the list and the nodes' next/prev are seen as they
 * were left. Ops run where ito does not switch threads; the kernel may still
 * preempt the holder's kernel thread, hence the sched_yield. */
static void q_lock(struct rr_queue *q)
{
    unsigned spins = 0;
    while (atomic_exchange_explicit(&q->lock, 1, memory_order_acquire))
        while (atomic_load_explicit(&q->lock, memory_order_relaxed))
            if (++spins % RR_SPINS == 0)
                sched_yield();
            else
                cpu_relax();
}

static void q_unlock(struct rr_queue *q) { atomic_store_explicit(&q->lock, 0, memory_order_release); }

/* One writer per counter: a load and a store, no locked instruction. */
static void count(atomic_ulong *c, unsigned long k)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + k, memory_order_relaxed);
}

static long len_of(struct rr_queue *q) { return atomic_load_explicit(&q->len, memory_order_relaxed); }
static void len_add(struct rr_queue *q, long d) { atomic_store_explicit(&q->len, len_of(q) + d, memory_order_relaxed); }

/* The list, under q's lock. */
static void push_tail(struct rr_queue *q, ito_policy_node_t *n)
{
    n->next = NULL;
    n->prev = q->tail;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    len_add(q, 1);
}

static void unlink_node(struct rr_queue *q, ito_policy_node_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        q->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        q->tail = n->prev;
    len_add(q, -1);
}

/* ---------------------------------------------------------------- the ops */

static int rr_init(int nvprocs, void **shared)
{
    size_t size = sizeof(struct rr) + (size_t)nvprocs * sizeof(struct rr_queue);
    struct rr *r = aligned_alloc(RR_LINE, (size + RR_LINE - 1) / RR_LINE * RR_LINE);
    if (!r)
        return ENOMEM;
    r->count = nvprocs;
    for (int i = 0; i < nvprocs; i++)
        r->q[i] = (struct rr_queue){ .head = NULL };
    *shared = rr_state = r;   /* lives as long as the process: ito has no fini op */
    return 0;
}

static int rr_vproc_init(ito_policy_vproc_t *vp)
{
    vp->local = &((struct rr *)vp->shared)->q[vp->index];
    return 0;
}

static void rr_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    struct rr_queue *q = vp->local;
    q_lock(q);
    bool others = q->head != NULL;
    push_tail(q, n);   /* every reason alike: that is round robin */
    q_unlock(q);
    count(&q->reasons[(unsigned)why < RR_REASONS ? why : 0], 1);
    /* The core wakes an idle vproc after a spawn or a wake-up, not after a
     * yield or a slice's end. If threads wait here besides this one, an
     * idle vproc could run them now. */
    if (others && (why == ITO_READY_YIELD || why == ITO_READY_PREEMPT || why == ITO_READY_DISPLACED))
        ito_policy_share();
}

static ito_policy_node_t *rr_pick(ito_policy_vproc_t *vp)
{
    struct rr_queue *q = vp->local;
    /* Only the owner adds to its queue, and it reads its own last store of
     * len or a later one; later ones are thieves' removals. So 0 means
     * empty (idle vprocs call pick often: no lock for nothing); another
     * value may be stale, and the lock settles it. */
    if (len_of(q) == 0)
        return NULL;
    q_lock(q);
    ito_policy_node_t *n = q->head;
    if (n)
        unlink_node(q, n);
    q_unlock(q);
    if (n)
        count(&q->picked, 1);
    return n;
}

/* A joiner wants n, a thread not yet started, to run now. Cheap when n is
 * at either end of this queue: the child just spawned is usually the tail.
 * Only pointers are compared: n's fields are read only if n is ours. */
static bool rr_take(ito_policy_vproc_t *vp, ito_policy_node_t *n)
{
    struct rr_queue *q = vp->local;
    if (len_of(q) == 0)
        return false;
    q_lock(q);
    bool mine = n == q->tail || n == q->head;
    if (mine)
        unlink_node(q, n);
    q_unlock(q);
    if (mine)
        count(&q->taken, 1);
    return mine;
}

static ito_policy_node_t *rr_steal(ito_policy_vproc_t *vp)
{
    struct rr *r = vp->shared;   /* every queue exists once init has run */
    struct rr_queue *self = vp->local, *victim = NULL;
    long most = 0;
    for (int i = 0; i < r->count; i++)   /* the longest queue, by the hints */
        if (&r->q[i] != self && len_of(&r->q[i]) > most) {
            victim = &r->q[i];
            most = len_of(victim);
        }
    if (!victim)
        return NULL;
    /* Cut the older half off the victim's head, under its lock only. */
    q_lock(victim);
    long want = (len_of(victim) + 1) / 2;
    if (want > RR_STEAL_MAX)
        want = RR_STEAL_MAX;
    ito_policy_node_t *first = want ? victim->head : NULL, *last = first;
    for (long i = 1; i < want; i++)
        last = last->next;
    if (first) {
        victim->head = last->next;
        if (victim->head)
            victim->head->prev = NULL;
        else
            victim->tail = NULL;
        last->next = NULL;
        len_add(victim, -want);
    }
    q_unlock(victim);
    if (!first)
        return NULL;   /* emptied since we looked */
    /* Run the oldest; queue the others here, oldest first, under our lock. */
    if (first->next) {
        q_lock(self);
        for (ito_policy_node_t *x = first->next, *nx; x; x = nx) {
            nx = x->next;
            push_tail(self, x);
        }
        q_unlock(self);
    }
    count(&self->stolen, 1);
    count(&self->moved, (unsigned long)want - 1);
    return first;
}

static const ito_policy_ops_t rr_ops = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "rr",
    .init = rr_init,
    .vproc_init = rr_vproc_init,
    .enqueue = rr_enqueue,
    .pick = rr_pick,
    .take = rr_take,
    .steal = rr_steal,
};

/* ------------------------------------------------------------ a workload */

#define FIB_N 20
#define ROUNDS 20000
#define ADDERS 4
#define ADDS 5000
#define SPINNERS 4
#define SPIN_STEPS 10000000L /* a spinner's computation: about 11 ms of CPU at -O2 on the development
                                 machine (the loop alone, timed with CLOCK_THREAD_CPUTIME_ID) */

static atomic_int errors;

static void *fib(void *arg)
{
    long n = (long)arg;
    if (n < 2)
        return (void *)n;
    ito_thread_t t;
    if (ito_spawn(&t, NULL, fib, (void *)(n - 1)) != 0) {
        atomic_fetch_add(&errors, 1);
        return (void *)0;
    }
    long b = (long)fib((void *)(n - 2));
    void *a = NULL;
    if (ito_join(t, &a) != 0)
        atomic_fetch_add(&errors, 1);
    return (void *)((long)a + b);
}

/* Two threads pass a ball back and forth; the semaphores order their
 * accesses to it. */
static ito_sem_t ping, pong;
static long ball;

static void *pinger(void *arg)
{
    for (long i = 0; i < ROUNDS; i++) {
        if (ball != 2 * i)
            atomic_fetch_add(&errors, 1);
        ball++;
        ito_sem_post(&pong);
        ito_sem_wait(&ping);
    }
    return arg;
}

static void *ponger(void *arg)
{
    for (long i = 0; i < ROUNDS; i++) {
        ito_sem_wait(&pong);
        if (ball != 2 * i + 1)
            atomic_fetch_add(&errors, 1);
        ball++;
        ito_sem_post(&ping);
    }
    return arg;
}

static ito_mutex_t lock = ITO_MUTEX_INIT;
static long total;

static void *adder(void *arg)
{
    for (int i = 0; i < ADDS; i++) {
        ito_mutex_lock(&lock);
        total++;
        ito_mutex_unlock(&lock);
        if (i % 10 == 0)
            ito_yield();
    }
    return arg;
}

/* Threads that compute without calling ito: spawned on one vproc, they wait
 * in its queue until it is free or an idle vproc steals them; a time slice
 * may end while they run. All compute the same value. */
static atomic_int ran_on[2];

static void *spinner(void *arg)
{
    unsigned long x = 1;
    for (long i = 0; i < SPIN_STEPS; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    int v = ito_vproc_self();
    if (v >= 0 && v < 2)
        atomic_store(&ran_on[v], 1);
    return (void *)x;
}

static int fail(const char *what)
{
    fprintf(stderr, "policy_rr: FAILED: %s\n", what);
    return 1;
}

int main(void)
{
    /* Register before initialization; the name is then taken. */
    if (ito_policy_register(&rr_ops) != 0)
        return fail("ito_policy_register");
    if (ito_policy_register(&rr_ops) != EEXIST)
        return fail("a second registration of \"rr\" was not refused with EEXIST");

    /* Select it (ITO_POLICY=rr in the environment would do the same for
     * ito_init(NULL) or a first ito call). */
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 2;
    cfg.policy = "rr";
    if (ito_init(&cfg) != 0 || strcmp(ito_policy_name(), "rr") != 0)
        return fail("ito_init with the rr policy");

    ito_thread_t t, p, q, adders[ADDERS];
    void *r = NULL;
    if (ito_spawn(&t, NULL, fib, (void *)(long)FIB_N) || ito_join(t, &r))
        return fail("spawn/join of the fork/join tree");
    if ((long)r != 6765)   /* fib(20) */
        return fail("fib(20) is not 6765");

    if (ito_sem_init(&ping, 0) || ito_sem_init(&pong, 0) || ito_spawn(&p, NULL, pinger, NULL) ||
        ito_spawn(&q, NULL, ponger, NULL) || ito_join(p, NULL) || ito_join(q, NULL))
        return fail("the ping-pong");
    if (ball != 2 * ROUNDS)
        return fail("the ball was not passed 2 * ROUNDS times");
    ito_sem_destroy(&ping);
    ito_sem_destroy(&pong);

    for (int i = 0; i < ADDERS; i++)
        if (ito_spawn(&adders[i], NULL, adder, NULL))
            return fail("spawn of an adder");
    for (int i = 0; i < ADDERS; i++)
        if (ito_join(adders[i], NULL))
            return fail("join of an adder");
    if (total != (long)ADDERS * ADDS)
        return fail("the mutex lost increments");
    if (atomic_load(&errors))
        return fail("a worker thread saw a wrong value or an error");

    ito_thread_t spinners[SPINNERS];
    void *val[SPINNERS];
    for (int i = 0; i < SPINNERS; i++)
        if (ito_spawn(&spinners[i], NULL, spinner, NULL))
            return fail("spawn of a spinner");
    for (int i = 0; i < SPINNERS; i++)
        if (ito_join(spinners[i], &val[i]) || val[i] != val[0])
            return fail("the spinners' values differ");

    /* Every thread is done but this one, which runs: the policy holds none.
     * Each op that moved a thread happened before that thread ran, and so
     * before the joins above returned; relaxed loads see their counts.
     * (Never take a queue lock here: outside an op a time slice may end
     * while it is held, and the enqueue of this thread would wait for ever.) */
    unsigned long in = 0, picked = 0, taken = 0, stolen = 0, moved = 0, why[RR_REASONS] = { 0 };
    long queued = 0;
    for (int i = 0; i < rr_state->count; i++) {
        struct rr_queue *x = &rr_state->q[i];
        for (int k = 0; k < RR_REASONS; k++) {
            why[k] += atomic_load_explicit(&x->reasons[k], memory_order_relaxed);
            in += atomic_load_explicit(&x->reasons[k], memory_order_relaxed);
        }
        picked += atomic_load_explicit(&x->picked, memory_order_relaxed);
        taken += atomic_load_explicit(&x->taken, memory_order_relaxed);
        stolen += atomic_load_explicit(&x->stolen, memory_order_relaxed);
        moved += atomic_load_explicit(&x->moved, memory_order_relaxed);
        queued += len_of(x);
    }
    if (queued != 0 || in != picked + taken + stolen)
        return fail("threads given to the policy did not all come out");
    printf("policy rr on %d vprocs: fib(%d) = %ld, %d ping-pong rounds, %ld increments, "
           "%d spinners (ran on vproc 0: %s, 1: %s): ok\n",
           ito_vproc_count(), FIB_N, (long)r, ROUNDS, total, SPINNERS, atomic_load(&ran_on[0]) ? "yes" : "no",
           atomic_load(&ran_on[1]) ? "yes" : "no");
    printf("  enqueued %lu (spawn %lu, wake %lu, yield %lu, resume %lu, preempt %lu, displaced %lu, other %lu)\n",
           in, why[ITO_READY_SPAWN], why[ITO_READY_WAKE], why[ITO_READY_YIELD], why[ITO_READY_RESUME],
           why[ITO_READY_PREEMPT], why[ITO_READY_DISPLACED], why[0]);
    printf("  picked %lu, taken by joiners %lu, stolen %lu (and %lu moved along)\n", picked, taken, stolen,
           moved);
    return 0;
}
