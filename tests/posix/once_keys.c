/* SPDX-License-Identifier: MIT */
/* pthread_once and thread-specific data: pthread_once runs its routine exactly
 * once however many threads race on it, and none returns before it has
 * finished; pthread_key_create/delete and pthread_getspecific/setspecific:
 * values are per thread and NULL at first, destructors run at thread exit in
 * the exiting thread with the value (repeated up to
 * PTHREAD_DESTRUCTOR_ITERATIONS times, never for NULL values, never by
 * pthread_key_delete), the key limit PTHREAD_KEYS_MAX, and a re-created key
 * starting NULL everywhere.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "conform.h"

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, fn, arg));
    return t;
}

static void *join(pthread_t t)
{
    void *res;
    OK(pthread_join(t, &res));
    return res;
}

/* ---- pthread_once ---- */

#define ONCE_RACERS 50

static pthread_once_t race_once = PTHREAD_ONCE_INIT;
static int race_calls;  /* written by the init routine only */
static int race_done;
static struct sync race_start;

static void slow_init(void)
{
    race_calls++;
    struct timespec pause = { 0, 20 * 1000000 };
    nanosleep(&pause, NULL);
    race_done = 1;
}

static void *race_on_once(void *p)
{
    sync_wait(&race_start, 1);
    OK(pthread_once(&race_once, slow_init));
    /* "On return from pthread_once(), init_routine shall have completed." */
    return (void *)(intptr_t)race_done;
}

/* "The first call to pthread_once() by any thread in a process, with a given
 * once_control, shall call the init_routine with no arguments. Subsequent
 * calls of pthread_once() with the same once_control shall not call the
 * init_routine." */
static void once_runs_once_with_racers(void)
{
    pthread_t t[ONCE_RACERS];
    sync_init(&race_start);
    for (int i = 0; i < ONCE_RACERS; i++)
        t[i] = spawn(race_on_once, NULL);
    sync_add(&race_start, 1);
    for (int i = 0; i < ONCE_RACERS; i++)
        CHECK_EQ((intptr_t)join(t[i]), 1);
    CHECK_EQ(race_calls, 1);
    OK(pthread_once(&race_once, slow_init));
    CHECK_EQ(race_calls, 1);
    sync_destroy(&race_start);
}

static int calls_a, calls_b;

static void init_a(void)
{
    calls_a++;
}

static void init_b(void)
{
    calls_b++;
}

static void *once_b_in_thread(void *p)
{
    OK(pthread_once(p, init_b));
    return NULL;
}

/* Each once_control is independent of the others. */
static void once_controls_are_independent(void)
{
    static pthread_once_t a = PTHREAD_ONCE_INIT, b = PTHREAD_ONCE_INIT;
    OK(pthread_once(&a, init_a));
    join(spawn(once_b_in_thread, &b));
    OK(pthread_once(&a, init_a));
    join(spawn(once_b_in_thread, &b));
    CHECK_EQ(calls_a, 1);
    CHECK_EQ(calls_b, 1);
}

/* ---- values ---- */

static void *get_value(void *p)
{
    return pthread_getspecific(*(pthread_key_t *)p);
}

struct parked {
    pthread_key_t key;
    struct sync ready, go;
    void *seen;
};

/* Wait until told, then report the key's value in this thread. */
static void *park_then_get(void *p)
{
    struct parked *k = p;
    sync_add(&k->ready, 1);
    sync_wait(&k->go, 1);
    k->seen = pthread_getspecific(k->key);
    return NULL;
}

/* "the value NULL shall be associated with the new key in all active
 * threads", and "Upon thread creation, the value NULL shall be associated
 * with all defined keys in the new thread." */
static void key_starts_null_everywhere(void)
{
    static struct parked k;
    sync_init(&k.ready);
    sync_init(&k.go);
    k.seen = &k;
    pthread_t early = spawn(park_then_get, &k);
    sync_wait(&k.ready, 1);

    OK(pthread_key_create(&k.key, NULL));
    CHECK(pthread_getspecific(k.key) == NULL);
    OK(pthread_setspecific(k.key, &k));
    CHECK(pthread_getspecific(k.key) == &k);
    CHECK(join(spawn(get_value, &k.key)) == NULL);
    sync_add(&k.go, 1);
    join(early);
    CHECK(k.seen == NULL);

    OK(pthread_key_delete(k.key));
    sync_destroy(&k.ready);
    sync_destroy(&k.go);
}

#define VALUE_THREADS 10

static pthread_key_t per_thread_key;
static struct sync values_set, values_check;

static void *set_own_value(void *p)
{
    OK(pthread_setspecific(per_thread_key, p));
    sync_add(&values_set, 1);
    sync_wait(&values_check, 1);
    CHECK(pthread_getspecific(per_thread_key) == p);
    return NULL;
}

static void key_values_per_thread(void)
{
    static int slot[VALUE_THREADS];
    int mine;
    pthread_t t[VALUE_THREADS];
    sync_init(&values_set);
    sync_init(&values_check);
    OK(pthread_key_create(&per_thread_key, NULL));
    OK(pthread_setspecific(per_thread_key, &mine));
    for (int i = 0; i < VALUE_THREADS; i++)
        t[i] = spawn(set_own_value, &slot[i]);
    sync_wait(&values_set, VALUE_THREADS);
    CHECK(pthread_getspecific(per_thread_key) == &mine);
    sync_add(&values_check, 1);
    for (int i = 0; i < VALUE_THREADS; i++)
        join(t[i]);
    CHECK(pthread_getspecific(per_thread_key) == &mine);
    OK(pthread_key_delete(per_thread_key));
    sync_destroy(&values_set);
    sync_destroy(&values_check);
}

/* ---- destructors ---- */

/* What a destructor saw; the value passed to it points at one of these.
 * Atomics because ThreadSanitizer stops following a thread at its last own
 * destructor round and would miss the join's ordering for later rounds. */
struct dtor_record {
    pthread_key_t key;
    int resets;              /* set the value again on the first `resets` calls */
    pthread_t owner;         /* the thread that set the value */
    atomic_int calls;
    atomic_int key_was_null; /* pthread_getspecific(key) == NULL in the destructor */
    atomic_int in_owner;     /* the destructor ran in the owner thread */
};

static void record_dtor(void *p)
{
    struct dtor_record *r = p;
    int calls = atomic_fetch_add(&r->calls, 1) + 1;
    atomic_store(&r->key_was_null, pthread_getspecific(r->key) == NULL);
    atomic_store(&r->in_owner, pthread_equal(pthread_self(), r->owner) != 0);
    if (calls <= r->resets)
        OK(pthread_setspecific(r->key, r));
}

static void *set_record(void *p)
{
    struct dtor_record *r = p;
    r->owner = pthread_self();
    OK(pthread_setspecific(r->key, r));
    return NULL;
}

static void *exit_with_record(void *p)
{
    set_record(p);
    pthread_exit(NULL);
}

/* At thread exit "the value of the key is set to NULL, and then the function
 * pointed to is called with the previously associated value as its sole
 * argument" -- in the exiting thread, on return and on pthread_exit alike. */
static void destructor_runs_at_exit(void)
{
    static struct dtor_record rec[2];
    for (int use_exit = 0; use_exit < 2; use_exit++) {
        struct dtor_record *r = &rec[use_exit];
        OK(pthread_key_create(&r->key, record_dtor));
        join(spawn(use_exit ? exit_with_record : set_record, r));
        CHECK_EQ(atomic_load(&r->calls), 1);
        CHECK(atomic_load(&r->key_was_null));
        CHECK(atomic_load(&r->in_owner));
        OK(pthread_key_delete(r->key));
    }
}

/* "If, after all the destructors have been called for all non-NULL values
 * with associated destructors, there are still some non-NULL values with
 * associated destructors, then the process is repeated." A destructor that
 * sets the value again on its first PTHREAD_DESTRUCTOR_ITERATIONS - 1 calls is
 * called exactly PTHREAD_DESTRUCTOR_ITERATIONS times. */
static void destructor_repeats_while_value_set(void)
{
    static struct dtor_record r = { .resets = PTHREAD_DESTRUCTOR_ITERATIONS - 1 };
    OK(pthread_key_create(&r.key, record_dtor));
    join(spawn(set_record, &r));
    CHECK_EQ(atomic_load(&r.calls), PTHREAD_DESTRUCTOR_ITERATIONS);
    CHECK(atomic_load(&r.in_owner));
    OK(pthread_key_delete(r.key));
}

/* "If, after at least {PTHREAD_DESTRUCTOR_ITERATIONS} iterations ... there
 * are still some non-NULL values ..., implementations may stop calling
 * destructors, or they may continue": at least that many calls, and this
 * destructor stops setting the value after 100 so that either way ends. */
static void destructor_iterations_at_least_minimum(void)
{
    static struct dtor_record r = { .resets = 100 };
    OK(pthread_key_create(&r.key, record_dtor));
    join(spawn(set_record, &r));
    CHECK(atomic_load(&r.calls) >= PTHREAD_DESTRUCTOR_ITERATIONS);
    CHECK(atomic_load(&r.calls) <= 101);
    OK(pthread_key_delete(r.key));
}

static int null_dtor_calls;

static void count_dtor(void *p)
{
    null_dtor_calls++;
}

static void *set_then_clear(void *p)
{
    pthread_key_t key = *(pthread_key_t *)p;
    OK(pthread_setspecific(key, &null_dtor_calls));
    OK(pthread_setspecific(key, NULL));
    return NULL;
}

static void *set_key_value(void *p)
{
    OK(pthread_setspecific(*(pthread_key_t *)p, p));
    return NULL;
}

/* Destructors are called only for non-NULL values; a key without a
 * destructor just forgets its value. */
static void destructor_not_run_for_null(void)
{
    pthread_key_t key, plain;
    null_dtor_calls = 0;
    OK(pthread_key_create(&key, count_dtor));
    join(spawn(get_value, &key));      /* never set */
    join(spawn(set_then_clear, &key)); /* set, then back to NULL */
    CHECK_EQ(null_dtor_calls, 0);
    OK(pthread_key_delete(key));

    OK(pthread_key_create(&plain, NULL));
    join(spawn(set_key_value, &plain));
    OK(pthread_key_delete(plain));
}

static int deleted_dtor_calls;

static void count_deleted_dtor(void *p)
{
    deleted_dtor_calls++;
}

/* Set a value for the key, then wait until told to end. */
static void *set_then_park(void *p)
{
    struct parked *k = p;
    OK(pthread_setspecific(k->key, k));
    sync_add(&k->ready, 1);
    sync_wait(&k->go, 1);
    return NULL;
}

/* "No destructor functions shall be invoked by pthread_key_delete()", and a
 * deleted key has no destructor left to run when a thread that had a value
 * for it exits. */
static void key_delete_runs_no_destructor(void)
{
    static struct parked k;
    deleted_dtor_calls = 0;
    sync_init(&k.ready);
    sync_init(&k.go);
    OK(pthread_key_create(&k.key, count_deleted_dtor));
    OK(pthread_setspecific(k.key, &k));
    pthread_t t = spawn(set_then_park, &k);
    sync_wait(&k.ready, 1);
    OK(pthread_key_delete(k.key));
    CHECK_EQ(deleted_dtor_calls, 0);
    sync_add(&k.go, 1);
    join(t);
    CHECK_EQ(deleted_dtor_calls, 0);
    sync_destroy(&k.ready);
    sync_destroy(&k.go);
}

/* ---- the key limit ---- */

static pthread_key_t many[PTHREAD_KEYS_MAX + 1];
static int many_count;
static int many_dtor_calls;

static void count_many_dtor(void *p)
{
    many_dtor_calls++;
}

static void *many_values(void *p)
{
    for (int i = 0; i < many_count; i++)
        CHECK(pthread_getspecific(many[i]) == NULL);
    for (int i = 0; i < many_count; i++)
        OK(pthread_setspecific(many[i], &many[i]));
    for (int i = 0; i < many_count; i++)
        CHECK(pthread_getspecific(many[i]) == &many[i]);
    return NULL;
}

/* pthread_key_create "shall fail if: [EAGAIN] ... the system-imposed limit on
 * the total number of keys per process {PTHREAD_KEYS_MAX} has been exceeded".
 * A few keys may already be in use by the C library or a sanitizer. */
static void keys_up_to_the_limit(void)
{
    int rc = 0;
    many_count = 0;
    while (many_count <= PTHREAD_KEYS_MAX) {
        rc = pthread_key_create(&many[many_count], count_many_dtor);
        if (rc != 0)
            break;
        many_count++;
    }
    CHECK_EQ(rc, EAGAIN);
    CHECK(many_count >= PTHREAD_KEYS_MAX - 10);

    for (int i = 0; i < many_count; i++)
        OK(pthread_setspecific(many[i], &many[i]));
    many_dtor_calls = 0;
    join(spawn(many_values, NULL));
    CHECK_EQ(many_dtor_calls, many_count);
    for (int i = 0; i < many_count; i++)
        CHECK(pthread_getspecific(many[i]) == &many[i]);

    for (int i = 0; i < many_count; i++)
        OK(pthread_key_delete(many[i]));
    CHECK_EQ(many_dtor_calls, many_count);
    /* Deleted keys can be created again. */
    for (int i = 0; i < many_count; i++)
        OK(pthread_key_create(&many[i], NULL));
    for (int i = 0; i < many_count; i++)
        OK(pthread_key_delete(many[i]));
}

/* ---- re-created keys ---- */

struct recreate {
    pthread_key_t old_key, new_key;
    struct sync ready, go;
    void *seen;
};

static int recreated_dtor_calls;

static void count_recreated_dtor(void *p)
{
    recreated_dtor_calls++;
}

/* Set a value for the old key; once the key is re-created, read the new one. */
static void *set_old_then_get_new(void *p)
{
    struct recreate *r = p;
    OK(pthread_setspecific(r->old_key, r));
    sync_add(&r->ready, 1);
    sync_wait(&r->go, 1);
    r->seen = pthread_getspecific(r->new_key);
    return NULL;
}

/* A key deleted and created again (it may well get the same pthread_key_t
 * value) starts NULL in every thread, including those that had a value for
 * the old key; those old values get no destructor call. */
static void recreated_key_starts_null(void)
{
    static struct recreate r;
    sync_init(&r.ready);
    sync_init(&r.go);
    recreated_dtor_calls = 0;
    OK(pthread_key_create(&r.old_key, count_recreated_dtor));
    OK(pthread_setspecific(r.old_key, &r));
    r.seen = &r;
    pthread_t t = spawn(set_old_then_get_new, &r);
    sync_wait(&r.ready, 1);

    OK(pthread_key_delete(r.old_key));
    OK(pthread_key_create(&r.new_key, count_recreated_dtor));
    CHECK(pthread_getspecific(r.new_key) == NULL);
    sync_add(&r.go, 1);
    join(t);
    CHECK(r.seen == NULL);
    CHECK(join(spawn(get_value, &r.new_key)) == NULL);
    CHECK_EQ(recreated_dtor_calls, 0);
    OK(pthread_key_delete(r.new_key));
    sync_destroy(&r.ready);
    sync_destroy(&r.go);
}

int main(void)
{
    RUN_CASE(once_runs_once_with_racers, 10);
    RUN_CASE(once_controls_are_independent, 10);
    RUN_CASE(key_starts_null_everywhere, 10);
    RUN_CASE(key_values_per_thread, 10);
    RUN_CASE(destructor_runs_at_exit, 10);
    RUN_CASE(destructor_repeats_while_value_set, 10);
    RUN_CASE(destructor_iterations_at_least_minimum, 10);
    RUN_CASE(destructor_not_run_for_null, 10);
    RUN_CASE(key_delete_runs_no_destructor, 10);
    RUN_CASE(keys_up_to_the_limit, 10);
    RUN_CASE(recreated_key_starts_null, 10);
    return 0;
}
