/* SPDX-License-Identifier: MIT */
/* The allocation table: the segment of shared memory where the ito processes
 * of one user post their hints and find the processors they hold. See
 * table.c for the design; the layout is an ABI between processes, pinned by
 * static_assert there. */
#ifndef ITO_CPUSHARE_TABLE_H
#define ITO_CPUSHARE_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ito.h>

#include "cpushare/cpumask.h"
#include "cpushare/divide.h"

#define ITO__ALLOC_MAGIC 0x636f6c6c61746f69ull   /* "itoalloc", little-endian */
#define ITO__ALLOC_VERSION 1                      /* also in the segment's name */
#define ITO__ALLOC_SLOTS ITO__DIVIDE_MAX_CLAIMS
/* Process priorities (ITO_PRIORITY): ITO_ALLOC_PRIORITY_MIN..MAX (ito.h);
 * higher is served first. */
#define ITO__ALLOC_NAME_LEN 16

enum { ITO__SLOT_FREE = 0, ITO__SLOT_USED = 1 };

/* One process. Written by its owner (want, priority) and by whoever divides
 * (grant), always under the table's lock; read without it only by ito-ctl
 * and by the owner looking up its grant (then checked, table.c). */
struct ito__table_slot {
    uint32_t state;                   /* ITO__SLOT_* */
    int32_t pid;
    uint64_t start_time;              /* the process's, from /proc/PID/stat: pid + this = liveness */
    uint64_t serial;                  /* registration number: tells a reused slot apart */
    int32_t priority;                 /* ITO_ALLOC_PRIORITY_MIN..MAX */
    int32_t want;                     /* processors it could use now, 0..ITO__ALLOC_MAX_CPUS */
    int32_t quota;                    /* its CPU quota in processors, 0: none */
    int32_t ngrant;                   /* processors in grant */
    ito__cpumask allowed;             /* its affinity mask */
    ito__cpumask grant;               /* what the last division gave it */
    char name[ITO__ALLOC_NAME_LEN];    /* its command name, for ito-ctl */
    int32_t vprocs;                   /* the most processors it can use (its vprocs), 1..ITO__ALLOC_MAX_CPUS */
    int32_t reserved;                 /* 0 */
    uint64_t grant_changes;           /* divisions that changed its grant */
};

struct ito__table_header {
    uint64_t magic;                   /* ITO__ALLOC_MAGIC */
    uint32_t version;                 /* ITO__ALLOC_VERSION */
    uint32_t size;                    /* sizeof(struct ito__table) */
    uint32_t nslots;                  /* ITO__ALLOC_SLOTS */
    uint32_t ncpus;                   /* ITO__ALLOC_MAX_CPUS */
    /* The lock: the holder's thread id in the low half and the low 32 bits
     * of its start time in the high half (0: free). A waiter that finds the
     * holder gone takes it over (table.c). */
    _Atomic uint64_t lock;
    _Atomic uint32_t lock_seq;        /* futex: bumped at every unlock */
    /* Futex: bumped (release) after every division that changed a grant;
     * every process sleeps on it. */
    _Atomic uint32_t generation;
    uint64_t next_serial;             /* lock */
    uint64_t divisions;               /* lock: divisions made */
    uint64_t reallocations;           /* lock: divisions that changed some grant */
    uint64_t rebuilds;                /* lock: times the table was found damaged and reset */
    uint64_t takeovers;               /* lock: times a dead holder's lock was taken over */
    ito__cpumask online;              /* lock: the processors divided last time */
};

struct ito__table {
    struct ito__table_header h;
    struct ito__table_slot slot[ITO__ALLOC_SLOTS];
};

/* The table at `path` (NULL: this user's default), created on demand with
 * mode 0600. 0 or an errno value: EACCES if the file there is another
 * user's (or not a regular file), ELOOP if it is a symbolic link. */
int ito__table_open(const char *path, struct ito__table **out);
void ito__table_close(struct ito__table *t);
/* Where the table of a domain (ITO_ALLOC_DOMAIN; NULL or "": none) lives:
 * DIR/ito-alloc-UID[-DOMAIN]-v1, DIR being the first of /run/user/UID (the
 * user's runtime directory, if it is the user's and 0700-like), /run (root
 * only) and /dev/shm. Every process of the user finds the same. */
void ito__table_path(const char *domain, char *buf, size_t len);
/* Is `domain` a domain name: 1 to ITO__ALLOC_DOMAIN_MAX letters, digits,
 * '-' and '_'? */
#define ITO__ALLOC_DOMAIN_MAX 64
bool ito__table_domain_ok(const char *domain);

/* Take the lock; a holder that died is taken over. Then every field is
 * checked and a damaged table rebuilt. Returns true if it was rebuilt or
 * taken over: the caller must divide again. */
bool ito__table_lock(struct ito__table *t);
void ito__table_unlock(struct ito__table *t);

/* Under the lock: drop the slots of processes that are gone, divide the
 * processors among the others, and if a grant changed, bump the generation
 * and wake every process. Returns whether a grant changed. */
bool ito__table_divide(struct ito__table *t);

/* What a process posts: its hints (Table 3 of [SA]) and what they are
 * bounded by. */
struct ito__table_hints {
    int priority;                     /* clamped to ITO_ALLOC_PRIORITY_MIN..MAX */
    int want;                         /* processors it could use now */
    int quota;                        /* its CPU quota in processors, 0: none */
    int vprocs;                       /* the most it can use */
    ito__cpumask allowed;             /* its affinity mask */
    char name[ITO__ALLOC_NAME_LEN];
};

/* Register this process: a slot, and a first division. ENOSPC: the table is
 * full of live processes. */
int ito__table_join(struct ito__table *t, const struct ito__table_hints *hi, int *slot, uint64_t *serial);
/* Post new hints (divides if they changed). ESRCH: the slot is no longer
 * ours (the table was rebuilt): join again. */
int ito__table_post(struct ito__table *t, int slot, uint64_t serial, const struct ito__table_hints *hi);
/* Give the slot up: its processors go to the others. */
void ito__table_leave(struct ito__table *t, int slot, uint64_t serial);
/* What a process may show of the table (ito_alloc_info). */
struct ito__table_view {
    int processes;             /* registered */
    uint64_t reallocations;    /* divisions that changed some grant */
    ito__cpumask shared_above; /* processors of this grant that a process of higher priority holds too */
};
/* This process's grant (never empty; inside the online processors), and the
 * generation it goes with: sleep on t->h.generation while it is unchanged.
 * view (may be NULL): filled under the same lock. ESRCH: the slot is no
 * longer ours. */
int ito__table_grant(struct ito__table *t, int slot, uint64_t serial, ito__cpumask *out, uint32_t *generation,
                     struct ito__table_view *view);

/* A process's start time (clock ticks since boot, /proc/PID/stat field 22),
 * or 0 if there is no such process (or thread), or it has ended and waits
 * to be reaped (a zombie). */
uint64_t ito__table_start_time(pid_t pid);
/* Is the process (or thread) pid with this start time still there? */
bool ito__table_alive(pid_t pid, uint64_t start_time);

#endif
