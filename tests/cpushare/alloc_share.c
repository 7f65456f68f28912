/* SPDX-License-Identifier: MIT */
/* The division of processors among processes (src/cpushare/divide.c) as a pure
 * function: a table of cases with their expected grants, then properties
 * checked on many random inputs — grants inside the affinity mask, at least
 * one processor each, no more than wanted, no processor left idle that an
 * unsatisfied process could use, equal shares within a priority, higher
 * priorities served first, the same answer for the same input. */
#include <stdio.h>
#include <string.h>

#include "cpushare/divide.h"
#include "common.h"

/* The table's rows mostly leave `max` out (0: as want). */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* "0-2,5" -> mask; "" -> empty; "all" -> 0..ncpu-1. */
static ito__cpumask mask(const char *s, int ncpu)
{
    ito__cpumask m;
    ito__cpumask_zero(&m);
    if (!strcmp(s, "all")) {
        for (int c = 0; c < ncpu; c++)
            ito__cpumask_set(&m, c);
        return m;
    }
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b; c++)
            ito__cpumask_set(&m, (int)c);
        s = *end == ',' ? end + 1 : end;
    }
    return m;
}

static void show(const ito__cpumask *m, char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    ITO_CPUMASK_FOR_EACH(c, m)
        k += (size_t)snprintf(out + k, len - k, "%s%d", k ? "," : "", c);
}

struct claim_spec {
    int priority, want, quota;
    const char *allowed, *held, *expect;
    int max;   /* 0: as want */
};

struct case_spec {
    const char *name;
    int ncpu;
    struct claim_spec c[6];
};

#define END { 0, 0, 0, NULL, NULL, NULL }
static const struct case_spec cases[] = {
    { "two equal, two cpus", 2, { { 0, 2, 0, "all", "", "0" }, { 0, 2, 0, "all", "", "1" }, END } },
    { "two equal, three cpus: one shared", 3,
      { { 0, 3, 0, "all", "", "0,2" }, { 0, 3, 0, "all", "", "0,1" }, END } },
    { "two equal, four cpus", 4, { { 0, 4, 0, "all", "", "0,2" }, { 0, 4, 0, "all", "", "1,3" }, END } },
    { "one wants little: the rest to the other", 4,
      { { 0, 1, 0, "all", "", "0" }, { 0, 4, 0, "all", "", "1-3" }, END } },
    { "priority takes all; the low one shares one", 4,
      { { 1, 4, 0, "all", "", "0-3" }, { 0, 4, 0, "all", "", "0" }, END } },
    { "what the high one does not want goes down", 4,
      { { 1, 2, 0, "all", "", "0,1" }, { 0, 4, 0, "all", "", "2,3" }, END } },
    { "three levels", 6,
      { { 2, 1, 0, "all", "", "0" }, { 1, 2, 0, "all", "", "1,2" }, { 0, 9, 0, "all", "", "3-5" }, END } },
    { "affinity", 4, { { 0, 4, 0, "0", "", "0" }, { 0, 4, 0, "all", "", "1-3" }, END } },
    { "a narrow mask is not starved by a wide one", 4,
      { { 0, 4, 0, "0,1", "", "0,1" }, { 0, 4, 0, "all", "", "2,3" }, END } },
    { "quota", 4, { { 0, 4, 1, "all", "", "0" }, { 0, 4, 0, "all", "", "1-3" }, END } },
    { "held processors are kept", 4,
      { { 0, 4, 0, "all", "2,3", "2,3" }, { 0, 4, 0, "all", "", "0,1" }, END } },
    { "a newcomer takes half of the holder's", 4,
      { { 0, 4, 0, "all", "0-3", "0,2" }, { 0, 4, 0, "all", "", "1,3" }, END } },
    { "a newcomer takes what nobody holds", 6,
      { { 0, 6, 0, "all", "0,1", "0,1" }, { 0, 6, 0, "all", "", "4,5" }, { 0, 6, 0, "all", "2,3", "2,3" }, END } },
    { "three on two cpus: one shares", 2,
      { { 0, 2, 0, "all", "", "0" }, { 0, 2, 0, "all", "", "1" }, { 0, 2, 0, "all", "", "0" }, END } },
    { "want 0 still gets one, shared", 2, { { 0, 0, 0, "all", "", "0" }, { 0, 2, 0, "all", "", "0,1" }, END } },
    { "want 0 shares the least shared", 3,
      { { 0, 2, 0, "all", "", "0,2" }, { 0, 2, 0, "all", "", "0,1" }, { 0, 0, 0, "all", "", "1" }, END } },
    { "a mask with no online cpu: any", 2, { { 0, 2, 0, "7", "", "0,1" }, END } },
    { "alone: everything wanted", 8, { { 0, 8, 0, "all", "", "0-7" }, END } },
    { "alone, wanting 3 of 8", 8, { { 0, 3, 0, "all", "", "0-2" }, END } },
    { "alone and idle, with 4 vprocs: keeps them all", 4, { { 0, 0, 0, "all", "", "0-3", 4 }, END } },
    { "what nobody wants goes round", 6,
      { { 0, 1, 0, "all", "", "0,2,4", 3 }, { 0, 0, 0, "all", "", "1,3,5", 6 }, END } },
    { "unwanted ones only up to the vprocs", 4,
      { { 1, 0, 0, "all", "", "1", 1 }, { 0, 1, 0, "all", "", "0,2", 2 }, END } },
};

static void run_case(const struct case_spec *cs)
{
    struct ito__divide_claim claims[6];
    ito__cpumask grant[6], online = mask("all", cs->ncpu);
    int n = 0;
    for (; cs->c[n].allowed; n++) {
        const struct claim_spec *c = &cs->c[n];
        claims[n] = (struct ito__divide_claim){ .priority = c->priority, .want = c->want, .quota = c->quota,
                                               .max = c->max, .allowed = mask(c->allowed, cs->ncpu),
                                               .held = mask(c->held, cs->ncpu) };
    }
    ito__divide(claims, n, &online, grant);
    for (int i = 0; i < n; i++) {
        char got[256];
        show(&grant[i], got, sizeof got);
        ito__cpumask want = mask(cs->c[i].expect, cs->ncpu);
        if (!ito__cpumask_equal(&grant[i], &want)) {
            fprintf(stderr, "case \"%s\": process %d got {%s}, expected {%s}\n", cs->name, i, got,
                    cs->c[i].expect);
            abort();
        }
    }
}

/* Properties of one division of random input. */
static void check_properties(uint64_t *seed)
{
    int ncpu = 1 + (int)(test_rand(seed) % 40);
    if (test_rand(seed) % 8 == 0)
        ncpu = ITO__ALLOC_MAX_CPUS - (int)(test_rand(seed) % 3);
    int n = 1 + (int)(test_rand(seed) % (test_rand(seed) % 4 == 0 ? ITO__DIVIDE_MAX_CLAIMS : 6));
    static struct ito__divide_claim claims[ITO__DIVIDE_MAX_CLAIMS];
    static ito__cpumask grant[ITO__DIVIDE_MAX_CLAIMS], again[ITO__DIVIDE_MAX_CLAIMS];
    ito__cpumask online;
    ito__cpumask_zero(&online);
    for (int c = 0; c < ncpu; c++)
        if (test_rand(seed) % 8 != 0 || c == 0)
            ito__cpumask_set(&online, c);
    for (int i = 0; i < n; i++) {
        struct ito__divide_claim *c = &claims[i];
        c->priority = (int)(test_rand(seed) % 3);
        c->want = (int)(test_rand(seed) % (ncpu + 2));
        c->quota = test_rand(seed) % 4 == 0 ? (int)(test_rand(seed) % 4) : 0;
        c->max = test_rand(seed) % 2 ? (int)(test_rand(seed) % (ncpu + 2)) : 0;
        ito__cpumask_zero(&c->allowed);
        ito__cpumask_zero(&c->held);
        bool narrow = test_rand(seed) % 3 == 0;
        for (int k = 0; k < ncpu; k++) {
            if (!narrow || test_rand(seed) % 3 == 0)
                ito__cpumask_set(&c->allowed, k);
            if (test_rand(seed) % 5 == 0)
                ito__cpumask_set(&c->held, k);
        }
    }
    ito__divide(claims, n, &online, grant);
    ito__divide(claims, n, &online, again);

    static short holders[ITO__ALLOC_MAX_CPUS];
    memset(holders, 0, sizeof holders);
    int cap[ITO__DIVIDE_MAX_CLAIMS], count[ITO__DIVIDE_MAX_CLAIMS];
    ito__cpumask allow[ITO__DIVIDE_MAX_CLAIMS];
    for (int i = 0; i < n; i++) {
        CHECK(ito__cpumask_equal(&grant[i], &again[i]));   /* deterministic */
        ito__cpumask_and(&allow[i], &claims[i].allowed, &online);
        if (ito__cpumask_count(&allow[i]) == 0)
            allow[i] = online;
        int room = ito__cpumask_count(&allow[i]);
        int c = claims[i].want;
        if (claims[i].quota > 0 && claims[i].quota < c)
            c = claims[i].quota;
        cap[i] = c < 0 ? 0 : c > room ? room : c;
        int lim = claims[i].max > 0 ? claims[i].max : c;
        if (claims[i].quota > 0 && claims[i].quota < lim)
            lim = claims[i].quota;
        lim = lim < cap[i] ? cap[i] : lim > room ? room : lim;
        count[i] = ito__cpumask_count(&grant[i]);
        CHECK(count[i] >= 1);                      /* at least one */
        CHECK(count[i] <= (lim > 1 ? lim : 1));    /* no more than its vprocs, quota, mask */
        ito__cpumask inside;
        ito__cpumask_and(&inside, &grant[i], &allow[i]);
        CHECK(ito__cpumask_equal(&inside, &grant[i]));   /* inside the mask, online */
        ITO_CPUMASK_FOR_EACH(cpu, &grant[i])
            holders[cpu]++;
    }
    /* No processor is left idle that someone could still hold. */
    for (int i = 0; i < n; i++) {
        int lim = claims[i].max > 0 ? claims[i].max : claims[i].want;
        if (claims[i].quota > 0 && claims[i].quota < lim)
            lim = claims[i].quota;
        if (count[i] < lim)
            ITO_CPUMASK_FOR_EACH(cpu, &allow[i])
                CHECK(holders[cpu] > 0);
    }
    for (int i = 0; i < n; i++) {
        if (count[i] >= cap[i])
            continue;
        /* Unsatisfied: no processor it may use is idle ... */
        ITO_CPUMASK_FOR_EACH(cpu, &allow[i])
            CHECK(holders[cpu] > 0);
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            /* ... nobody of lower priority holds one of its processors
             * alone, beyond the one every process gets ... */
            if (claims[j].priority < claims[i].priority && count[j] > 1) {
                ITO_CPUMASK_FOR_EACH(cpu, &grant[j])
                    CHECK(!ito__cpumask_has(&allow[i], cpu) || holders[cpu] > 1);
            }
            /* ... and an equal with the same mask has at most one more. */
            if (claims[j].priority == claims[i].priority && ito__cpumask_equal(&allow[i], &allow[j]))
                CHECK(count[j] <= count[i] + 1);
        }
    }
}

int main(void)
{
    for (size_t k = 0; k < (sizeof cases / sizeof cases[0]); k++)
        run_case(&cases[k]);
    printf("alloc_share: %zu table cases\n", (sizeof cases / sizeof cases[0]));
    uint64_t seed = 0x5eed;
    long rounds = test_scaled(20000);
    for (long r = 0; r < rounds; r++)
        check_properties(&seed);
    printf("alloc_share: %ld random divisions\n", rounds);
    return 0;
}
