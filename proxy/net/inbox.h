/* inbox: hands a function to another worker's event loop.
 *
 * Each worker thread runs its own event_base, and nothing of a base may be
 * touched from another thread. When one worker needs another to act (take
 * over a connection, apply a reloaded configuration, stop for a drain, the
 * admin endpoint's tail readers to look at new records), it posts a
 * function to the target's inbox; the target's loop runs it.
 *
 * Posting is thread-safe and never blocks on the target's work (a mutex
 * held for a list splice, then one eventfd write). Functions run in the
 * order posted, on the target's thread, at default priority.
 */
#ifndef MCPWARDEN_INBOX_H
#define MCPWARDEN_INBOX_H

struct event_base;
struct inbox;

typedef void (*inbox_fn)(void *arg);

/* NULL when out of memory or out of descriptors. */
struct inbox *inbox_new(struct event_base *base);
/* After the target's loop has stopped. Work never run is handed to its
 * `drop` function (when given), so what it owns is released. */
void inbox_free(struct inbox *ib);

/* Runs fn(arg) on the inbox's loop. On failure (-1: out of memory) the
 * caller still owns arg; drop is not called then. */
int inbox_post(struct inbox *ib, inbox_fn fn, inbox_fn drop, void *arg);

#endif
