/* jarena: see jarena.h.
 *
 * Layout: one reserved range of RANGE_SIZE bytes (MAP_NORESERVE: only the
 * blocks ever cut are resident), handed out a block at a time. A block
 * starts with its header; values follow, 16-byte aligned like malloc's.
 * Each thread that opens a window has a jthread: the block it cuts from,
 * a cache of empty blocks, and a list of values other threads freed.
 * Empty blocks beyond the cache go to a free list shared by all threads.
 */
#include "proxy/base/jarena.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define JARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JARENA_ASAN 1
#endif
#endif

#define BLOCK_SIZE 4096u
#define RANGE_SIZE ((size_t)256 << 20) /* 65,536 blocks of address space */
#define HDR_SIZE 32u                   /* header, rounded to the alignment */
#define ALIGN 16u
#define MAX_CUT 512u                   /* larger values are malloc'd */
#define CACHE_MAX 32u                  /* empty blocks a thread keeps */

struct jthread;

struct jblock {
	struct jthread *owner;  /* counts this block's values */
	struct jblock *next;    /* in a cache or the shared free list */
	uint32_t live;          /* values cut and not yet freed */
};
_Static_assert(sizeof(struct jblock) <= HDR_SIZE, "block header");

/* The fast path's one test is the room between next and end: end is
 * where cur ends (lim) while a window is open, and next while none is, so
 * that a closed window reads as a full block. */
struct jthread {
	struct jblock *cur;     /* being cut, or NULL */
	char *next, *end;       /* next value; lim or next (above) */
	char *lim;              /* where cur ends */
	unsigned open;          /* windows open (nested) */
	struct jblock *cache;   /* empty blocks */
	size_t ncache, used, values;
	struct jthread *all;    /* every jthread, kept reachable */
	pthread_mutex_t lock;   /* guards back, nback */
	void *back;             /* values freed by other threads, linked
	                           through their first word */
	size_t nback;
	atomic_int has_back;
};

static char *range;                 /* NULL: not installed */
static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t range_cut;            /* blocks handed out of the range */
static struct jblock *range_free;   /* empty blocks no cache kept */
static struct jthread *threads;     /* every jthread (range_lock) */
/* A thread that never opened a window reads this one: no block, no room,
 * so that ja_malloc need not test for a thread of its own. Never written. */
static struct jthread no_thread;
static _Thread_local struct jthread *tl = &no_thread;

static int in_range(const void *p)
{
	return (uintptr_t)p - (uintptr_t)range < RANGE_SIZE;
}

static struct jblock *block_of(const void *p)
{
	return (struct jblock *)((uintptr_t)p & ~(uintptr_t)(BLOCK_SIZE - 1));
}

static struct jblock *block_take(struct jthread *t)
{
	struct jblock *b = t->cache;
	if (b) {
		t->cache = b->next;
		t->ncache--;
		return b;
	}
	pthread_mutex_lock(&range_lock);
	if ((b = range_free))
		range_free = b->next;
	else if (range_cut < RANGE_SIZE / BLOCK_SIZE)
		b = (struct jblock *)(range + BLOCK_SIZE * range_cut++);
	pthread_mutex_unlock(&range_lock);
	return b;
}

/* b holds no value any more and is not being cut. */
static void block_give(struct jthread *t, struct jblock *b)
{
	t->used--;
	if (t->ncache < CACHE_MAX) {
		b->next = t->cache;
		t->cache = b;
		t->ncache++;
		return;
	}
	pthread_mutex_lock(&range_lock);
	b->next = range_free;
	range_free = b;
	pthread_mutex_unlock(&range_lock);
}

static void start_cut(struct jthread *t, struct jblock *b)
{
	t->next = (char *)b + HDR_SIZE;
	t->lim = (char *)b + BLOCK_SIZE;
	t->end = t->open ? t->lim : t->next;
}

/* The block being cut is full: the next one. 0 when the range is spent
 * (the caller mallocs). */
static int next_block(struct jthread *t)
{
	struct jblock *old = t->cur;
	t->cur = NULL;
	t->next = t->end = t->lim = NULL;
	if (old && old->live == 0)
		block_give(t, old);
	struct jblock *b = block_take(t);
	if (!b)
		return 0;
	b->owner = t;
	b->live = 0;
	t->cur = b;
	t->used++;
	start_cut(t, b);
	return 1;
}

/* The last of b's values is gone. */
static __attribute__((noinline)) void block_empty(struct jthread *t, struct jblock *b)
{
	if (b == t->cur)
		start_cut(t, b); /* empty again: cut it from the start */
	else
		block_give(t, b);
}

/* One of t's values is gone. */
static void release(struct jthread *t, struct jblock *b)
{
	t->values--;
	if (--b->live == 0)
		block_empty(t, b);
}

static void *cut(struct jthread *t, size_t n)
{
	void *p = t->next;
	t->next += n;
	t->cur->live++;
	t->values++;
	return p;
}

/* Off the fast path: a block is full, or no window is open. */
static __attribute__((noinline)) void *ja_malloc_slow(struct jthread *t, size_t size)
{
	size_t n = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (!t->open || size == 0 || size > MAX_CUT || !next_block(t))
		return malloc(size);
	return cut(t, n);
}

static void *ja_malloc(size_t size)
{
	struct jthread *t = tl;
	size_t n = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	/* size - 1 < MAX_CUT: 1 to MAX_CUT bytes, one test (0 wraps around).
	 * No room when no window is open (struct jthread). */
	if (size - 1 < MAX_CUT && (size_t)(t->end - t->next) >= n)
		return cut(t, n);
	return ja_malloc_slow(t, size);
}

/* Off the fast path, and out of it so that ja_free saves no registers. */
static __attribute__((noinline)) void hand_back(struct jthread *owner, void *p)
{
	pthread_mutex_lock(&owner->lock);
	*(void **)p = owner->back;
	owner->back = p;
	owner->nback++;
	atomic_store_explicit(&owner->has_back, 1, memory_order_relaxed);
	pthread_mutex_unlock(&owner->lock);
}

static void ja_free(void *p)
{
	if (!in_range(p)) {
		free(p);
		return;
	}
	struct jblock *b = block_of(p);
	struct jthread *t = b->owner;
	if (t == tl)
		release(t, b);
	else
		hand_back(t, p);
}

/* Counts what other threads freed of t's values. */
static void drain(struct jthread *t)
{
	pthread_mutex_lock(&t->lock);
	void *p = t->back;
	t->back = NULL;
	t->nback = 0;
	atomic_store_explicit(&t->has_back, 0, memory_order_relaxed);
	pthread_mutex_unlock(&t->lock);
	while (p) {
		void *next = *(void **)p;
		release(t, block_of(p));
		p = next;
	}
}

static struct jthread *thread_new(void)
{
	struct jthread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_lock(&range_lock);
	t->all = threads;
	threads = t;
	pthread_mutex_unlock(&range_lock);
	return t;
}

int jarena_install(void)
{
#ifdef JARENA_ASAN
	return 0;
#else
	if (range)
		return 0;
	void *r = mmap(NULL, RANGE_SIZE, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return -1;
	/* mmap gives page alignment; blocks need their own size's. */
	_Static_assert(BLOCK_SIZE == 4096u, "a block is a page");
	range = r;
	json_set_alloc_funcs(ja_malloc, ja_free);
	return 0;
#endif
}

int jarena_installed(void)
{
	return range != NULL;
}

void jarena_open(void)
{
	if (!range)
		return;
	struct jthread *t = tl;
	if (t == &no_thread) {
		if (!(t = thread_new()))
			return;
		tl = t;
	}
	if (atomic_load_explicit(&t->has_back, memory_order_relaxed))
		drain(t);
	if (t->open++ == 0)
		t->end = t->lim;
}

void jarena_close(void)
{
	struct jthread *t = tl;
	if (t->open && --t->open == 0)
		t->end = t->next;
}

void jarena_stats(struct jarena_stats *out)
{
	struct jthread *t = tl;
	*out = (struct jarena_stats){0};
	if (t == &no_thread)
		return;
	pthread_mutex_lock(&t->lock);
	out->handed_back = t->nback;
	pthread_mutex_unlock(&t->lock);
	out->blocks_used = t->used;
	out->blocks_cached = t->ncache;
	out->values = t->values;
}
