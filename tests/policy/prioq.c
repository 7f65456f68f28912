/* SPDX-License-Identifier: MIT */
/* The O(1) priority queue of the "prio" policies (src/policy/prioq.c) as a
 * data structure, table-driven: order across and within levels, front and
 * woken insertion, the swap of the active and expired arrays, eager and lazy
 * removal, starvation freedom over epochs, and 100,000 nodes. */
#include "common.h"

#include "policy/prioq.h"

enum { NODES = 100000 };
static ito_policy_node_t nodes[NODES];
static struct ito__prioq q;

static int id(const ito_policy_node_t *n) { return n ? (int)(n - nodes) : -1; }

/* One step of a case: push node `node` (at `level`, expired?, place: 0 back,
 * 1 front, 2 woken), pop
 * expecting `node` (-1: empty), claim it (lazy), or remove it (eager). */
enum op { PUSH, POP, CLAIM, REMOVE };
struct step {
    enum op op;
    int node, level;
    bool expired;
    int place;
};

struct scase {
    const char *name;
    unsigned levels;
    struct step steps[16];
    int nsteps;
    uint64_t swaps;   /* array swaps expected at the end */
};

#define S(...) { __VA_ARGS__ }
static const struct scase cases[] = {
    { "higher level first", 140,
      { S(PUSH, 0, 5), S(PUSH, 1, 139), S(PUSH, 2, 0), S(PUSH, 3, 64), S(POP, 1), S(POP, 3), S(POP, 0),
        S(POP, 2), S(POP, -1) }, 9, 0 },
    { "FIFO within a level", 16,
      { S(PUSH, 0, 7), S(PUSH, 1, 7), S(PUSH, 2, 7), S(POP, 0), S(PUSH, 0, 7), S(POP, 1), S(POP, 2),
        S(POP, 0), S(POP, -1) }, 9, 0 },
    { "front goes first", 16,
      { S(PUSH, 0, 3), S(PUSH, 1, 3), S(PUSH, 2, 3, false, 1), S(POP, 2), S(POP, 0), S(POP, 1) }, 6, 0 },
    { "woken go ahead of the back, in the order they came", 16,
      { S(PUSH, 0, 3), S(PUSH, 1, 3), S(PUSH, 2, 3, false, 2), S(PUSH, 3, 3, false, 2), S(POP, 2), S(POP, 3),
        S(POP, 0), S(POP, 1), S(POP, -1) }, 9, 0 },
    { "front goes before woken", 16,
      { S(PUSH, 0, 3, false, 2), S(PUSH, 1, 3, false, 1), S(PUSH, 2, 3, false, 2), S(POP, 1), S(POP, 0),
        S(POP, 2), S(POP, -1) }, 7, 0 },
    { "woken after the last woken one was removed", 16,
      { S(PUSH, 0, 3, false, 2), S(PUSH, 1, 3, false, 2), S(PUSH, 2, 3), S(REMOVE, 1), S(PUSH, 3, 3, false, 2),
        S(POP, 0), S(POP, 3), S(POP, 2), S(POP, -1) }, 9, 0 },
    { "woken after the last woken one ran", 16,
      { S(PUSH, 0, 3, false, 2), S(PUSH, 1, 3), S(POP, 0), S(PUSH, 2, 3, false, 2), S(POP, 2), S(POP, 1),
        S(POP, -1) }, 7, 0 },
    { "woken into the expired array goes to the back", 16,
      { S(PUSH, 0, 3, true), S(PUSH, 1, 3, true, 2), S(POP, 0), S(POP, 1), S(POP, -1) }, 5, 1 },
    { "expired waits for the active array", 140,
      { S(PUSH, 0, 100, true), S(PUSH, 1, 1), S(PUSH, 2, 2), S(POP, 2), S(POP, 1), S(POP, 0),
        S(POP, -1) }, 7, 1 },
    { "swap, then new arrivals go to the new active", 16,
      { S(PUSH, 0, 9, true), S(PUSH, 1, 2, true), S(POP, 0), S(PUSH, 2, 1), S(PUSH, 3, 15, true),
        S(POP, 1), S(POP, 2), S(POP, 3), S(POP, -1) }, 9, 2 },
    { "lazy removal: a claimed head is skipped", 140,
      { S(PUSH, 0, 50), S(PUSH, 1, 50), S(PUSH, 2, 10), S(CLAIM, 0), S(POP, 1), S(POP, 2),
        S(POP, -1) }, 7, 0 },
    { "lazy removal: a claimed node pushed again is unlinked first", 16,
      { S(PUSH, 0, 4), S(PUSH, 1, 4), S(CLAIM, 0), S(PUSH, 0, 12), S(POP, 0), S(POP, 1), S(POP, -1) },
      7, 0 },
    { "lazy removal of the only node of the active array", 16,
      { S(PUSH, 0, 4), S(PUSH, 1, 2, true), S(CLAIM, 0), S(POP, 1), S(POP, -1) }, 5, 1 },
    { "eager removal", 16,
      { S(PUSH, 0, 4), S(PUSH, 1, 4), S(PUSH, 2, 4), S(REMOVE, 1), S(POP, 0), S(POP, 2),
        S(POP, -1) }, 7, 0 },
    { "one level", 1,
      { S(PUSH, 0, 0), S(PUSH, 1, 0, true), S(PUSH, 2, 0), S(POP, 0), S(POP, 2), S(POP, 1) }, 6, 1 },
};

static void run_case(const struct scase *c)
{
    memset(nodes, 0, 8 * sizeof nodes[0]);
    ito__prioq_init(&q, c->levels, true);
    for (int i = 0; i < c->nsteps; i++) {
        const struct step *s = &c->steps[i];
        ito_policy_node_t *n = s->node >= 0 ? &nodes[s->node] : NULL;
        switch (s->op) {
        case PUSH:
            ito__prioq_push(&q, n, (unsigned)s->level, s->expired, (enum ito__prioq_place)s->place);
            CHECK_EQ(ito__prioq_state(n), ITO__PRIOQ_ENQUEUED);
            CHECK_EQ(ito__prioq_level(n), s->level);
            CHECK_EQ(ito__prioq_in_expired(&q, n), s->expired);
            break;
        case POP: {
            ito_policy_node_t *got = ito__prioq_pop(&q);
            if (id(got) != s->node)
                fprintf(stderr, "case \"%s\", step %d: popped %d, expected %d\n", c->name, i, id(got), s->node);
            CHECK_EQ(id(got), s->node);
            if (got)
                CHECK_EQ(ito__prioq_state(got), ITO__PRIOQ_OUT);
            break;
        }
        case CLAIM:
            CHECK(ito__prioq_claim(n));
            CHECK(!ito__prioq_claim(n));   /* handed out once */
            CHECK_EQ(ito__prioq_state(n), ITO__PRIOQ_DEQUEUED);
            break;
        case REMOVE:
            CHECK(ito__prioq_remove(&q, n));
            CHECK_EQ(ito__prioq_state(n), ITO__PRIOQ_OUT);
            break;
        }
    }
    CHECK_EQ(q.len, 0);
    CHECK_EQ(ito__prioq_top(&q), -1);
    if (q.swaps != c->swaps)
        fprintf(stderr, "case \"%s\": %llu swaps, expected %llu\n", c->name, (unsigned long long)q.swaps,
                (unsigned long long)c->swaps);
    CHECK_EQ(q.swaps, c->swaps);
}

/* Threads that always use up their slice go to the expired array; one that
 * never does stays active. Over a few epochs every node is popped once per
 * epoch, the highest level first within each. */
static void starvation_free(void)
{
    ito__prioq_init(&q, 140, false);   /* no claims: plain pops */
    enum { N = 50 };
    memset(nodes, 0, N * sizeof nodes[0]);
    for (int i = 0; i < N; i++)
        ito__prioq_push(&q, &nodes[i], (unsigned)(i * 139 / (N - 1)), false, ITO__PRIOQ_BACK);
    for (int epoch = 0; epoch < 5; epoch++) {
        int seen[N] = { 0 }, last = 140;
        for (int k = 0; k < N; k++) {
            ito_policy_node_t *n = ito__prioq_pop(&q);
            CHECK(n != NULL);
            int l = (int)ito__prioq_level(n);
            CHECK(l <= last);   /* within an epoch: most urgent first */
            last = l;
            seen[id(n)]++;
            ito__prioq_push(&q, n, (unsigned)l, true, ITO__PRIOQ_BACK);   /* used up its slice */
        }
        for (int i = 0; i < N; i++)
            CHECK_EQ(seen[i], 1);   /* even level 0 ran once per epoch */
    }
    CHECK_EQ(q.swaps, 4);   /* the 5th epoch's swap happens at the next pop */
}

/* 100,000 nodes over 140 levels in random order: they come out by level,
 * FIFO within a level; claims of random nodes are skipped. */
static void large(void)
{
    ito__prioq_init(&q, 140, true);
    memset(nodes, 0, sizeof nodes);
    uint64_t seed = 42;
    static int level[NODES];
    static bool claimed[NODES];
    for (int i = 0; i < NODES; i++) {
        level[i] = (int)(test_rand(&seed) % 140);
        ito__prioq_push(&q, &nodes[i], (unsigned)level[i], false, ITO__PRIOQ_BACK);
    }
    CHECK_EQ(ito__prioq_top(&q), 139);
    int nclaimed = 0;
    for (int i = 0; i < NODES; i += 7) {
        CHECK(ito__prioq_claim(&nodes[i]));
        claimed[i] = true;
        nclaimed++;
    }
    int last_level = 140, last_id = -1, popped = 0;
    for (ito_policy_node_t *n; (n = ito__prioq_pop(&q));) {
        int i = id(n);
        CHECK(!claimed[i]);
        CHECK(level[i] <= last_level);
        if (level[i] == last_level)
            CHECK(i > last_id);   /* FIFO within a level */
        last_level = level[i];
        last_id = i;
        popped++;
    }
    CHECK_EQ(popped + nclaimed, NODES);
    CHECK_EQ(q.len, 0);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    starvation_free();
    large();
    printf("prioq: %zu cases, starvation freedom, %d nodes: ok\n", sizeof cases / sizeof cases[0], NODES);
    return 0;
}
