/* SPDX-License-Identifier: MIT */
/* A set of CPUs of fixed size, as the allocator stores it in shared memory
 * (table.h) and divides it (divide.c). Plain words: no pointers, no lengths
 * to trust. */
#ifndef ITO_CPUSHARE_CPUMASK_H
#define ITO_CPUSHARE_CPUMASK_H

#include <stdbool.h>
#include <stdint.h>

/* CPUs 0..ITO__ALLOC_MAX_CPUS-1; a machine with more is allocated as if it
 * had this many (the rest stay the kernel's). */
#define ITO__ALLOC_MAX_CPUS 1024
#define ITO__CPUMASK_WORDS (ITO__ALLOC_MAX_CPUS / 64)

typedef struct ito__cpumask {
    uint64_t w[ITO__CPUMASK_WORDS];
} ito__cpumask;

static inline void ito__cpumask_zero(ito__cpumask *m)
{
    for (int i = 0; i < ITO__CPUMASK_WORDS; i++)
        m->w[i] = 0;
}

static inline bool ito__cpumask_has(const ito__cpumask *m, int cpu)
{
    return cpu >= 0 && cpu < ITO__ALLOC_MAX_CPUS && (m->w[cpu / 64] >> (cpu % 64)) & 1;
}

static inline void ito__cpumask_set(ito__cpumask *m, int cpu)
{
    if (cpu >= 0 && cpu < ITO__ALLOC_MAX_CPUS)
        m->w[cpu / 64] |= 1ull << (cpu % 64);
}

static inline void ito__cpumask_clear(ito__cpumask *m, int cpu)
{
    if (cpu >= 0 && cpu < ITO__ALLOC_MAX_CPUS)
        m->w[cpu / 64] &= ~(1ull << (cpu % 64));
}

static inline int ito__cpumask_count(const ito__cpumask *m)
{
    int n = 0;
    for (int i = 0; i < ITO__CPUMASK_WORDS; i++)
        n += __builtin_popcountll(m->w[i]);
    return n;
}

/* *out = a & b (out may alias either). */
static inline void ito__cpumask_and(ito__cpumask *out, const ito__cpumask *a, const ito__cpumask *b)
{
    for (int i = 0; i < ITO__CPUMASK_WORDS; i++)
        out->w[i] = a->w[i] & b->w[i];
}

static inline bool ito__cpumask_equal(const ito__cpumask *a, const ito__cpumask *b)
{
    for (int i = 0; i < ITO__CPUMASK_WORDS; i++)
        if (a->w[i] != b->w[i])
            return false;
    return true;
}

/* The lowest CPU of m at or above `from`, or -1. */
static inline int ito__cpumask_next(const ito__cpumask *m, int from)
{
    if (from < 0)
        from = 0;
    for (int i = from / 64; i < ITO__CPUMASK_WORDS; i++) {
        uint64_t w = m->w[i];
        if (i == from / 64)
            w &= ~0ull << (from % 64);
        if (w)
            return i * 64 + __builtin_ctzll(w);
    }
    return -1;
}

#define ITO_CPUMASK_FOR_EACH(cpu, m) \
    for (int cpu = ito__cpumask_next((m), 0); cpu >= 0; cpu = ito__cpumask_next((m), cpu + 1))

#endif
