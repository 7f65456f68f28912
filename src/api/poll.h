/* SPDX-License-Identifier: MIT */
/* poll with a deadline to the nanosecond (api/io.c), for the POSIX face's
 * ppoll, pselect and select, whose timeouts are finer than poll's. */
#ifndef ITO_API_POLL_H
#define ITO_API_POLL_H

#include <poll.h>
#include <stdint.h>

/* ito_poll until `deadline` (ito_now_ns's clock; 0: for ever). */
int ito__poll_until(struct pollfd *fds, nfds_t nfds, uint64_t deadline);

#endif
