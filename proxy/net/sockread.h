/* sockread: the read side of a connection's bufferevent, done by us on a
 * plain TCP socket.
 *
 * Why: libevent 2.1's socket bufferevent asks the kernel how many bytes
 * wait (ioctl FIONREAD) before every read and then reads at most 4 KiB.
 * Every proxied message so cost two syscalls where one does (two ioctls
 * per tools/call, ~3% of the proxy's CPU under load), and a 448 KB
 * tools/list reply took ~110 reads and loop turns. Here a read is one
 * readv into the bufferevent's own input buffer, of up to 8 KiB first,
 * then 16 KiB, repeated (up to 56 KiB per wake-up) only while each read
 * fills its space.
 *
 * Over TLS, OpenSSL reads the socket: a sockread made for a TLS
 * bufferevent only passes enable/disable on to it, so callers treat both
 * kinds alike.
 *
 * The behaviour is the bufferevent's read side, which the callers were
 * written against:
 *   - the bufferevent's read callback (bufferevent_getcb: whatever
 *     bufferevent_setcb set last) runs after bytes were added to the input;
 *   - EOF or an error disables reading, then runs its event callback with
 *     BEV_EVENT_READING | BEV_EVENT_EOF or BEV_EVENT_ERROR (errno kept).
 * No read timeout: an idle timeout is its owner's deadline (deadline.h),
 * pushed on from the read callback, the same on plain and TLS sockets.
 * The bufferevent's own reading stays disabled (and its read timeout
 * unset); its write side, write timeout and callbacks are untouched.
 *
 * One per bufferevent, on the bufferevent's loop, owned by whoever owns
 * the bufferevent and freed before it. */
#ifndef MCPWARDEN_SOCKREAD_H
#define MCPWARDEN_SOCKREAD_H

#include <event2/bufferevent.h>

struct sockread;

/* For bev (borrowed). plain: bev is a socket bufferevent (not TLS); its
 * socket may still be unset (a connect to come): it is looked up when
 * reading is first enabled. NULL when out of memory. */
struct sockread *sockread_new(struct bufferevent *bev, int plain);
void sockread_free(struct sockread *sr);

/* Starts reading. 0, or -1. */
int sockread_enable(struct sockread *sr);
void sockread_disable(struct sockread *sr);
int sockread_enabled(const struct sockread *sr);

/* Bytes read and reads done, since creation (for tests). */
void sockread_stats(const struct sockread *sr, size_t *bytes, size_t *reads);

#endif
