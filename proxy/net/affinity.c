/* affinity: see affinity.h. A jansson object (its hash table) from id to
 * worker, under a mutex; a counter read without the lock lets lookups skip
 * both while the table is empty. */
#include "proxy/net/affinity.h"

#include <pthread.h>
#include <stdlib.h>

#include <jansson.h>

struct affinity {
	pthread_mutex_t lock;
	json_t *ids;     /* owned: id -> worker index (guarded by lock) */
	size_t n;        /* entries; written under lock, read atomically */
};

struct affinity *affinity_new(void)
{
	struct affinity *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->ids = json_object();
	if (!a->ids || pthread_mutex_init(&a->lock, NULL) != 0) {
		json_decref(a->ids);
		free(a);
		return NULL;
	}
	return a;
}

void affinity_free(struct affinity *a)
{
	if (!a)
		return;
	json_decref(a->ids);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static void count(struct affinity *a)
{
	__atomic_store_n(&a->n, json_object_size(a->ids), __ATOMIC_RELEASE);
}

int affinity_set(struct affinity *a, const char *id, unsigned worker)
{
	pthread_mutex_lock(&a->lock);
	int rc = json_object_set_new(a->ids, id, json_integer(worker));
	count(a);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void affinity_forget(struct affinity *a, const char *id)
{
	pthread_mutex_lock(&a->lock);
	json_object_del(a->ids, id);
	count(a);
	pthread_mutex_unlock(&a->lock);
}

int affinity_get(struct affinity *a, const char *id)
{
	if (!id || __atomic_load_n(&a->n, __ATOMIC_ACQUIRE) == 0)
		return -1;
	pthread_mutex_lock(&a->lock);
	json_t *w = json_object_get(a->ids, id);
	int rc = w ? (int)json_integer_value(w) : -1;
	pthread_mutex_unlock(&a->lock);
	return rc;
}
