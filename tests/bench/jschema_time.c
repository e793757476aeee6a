/* jschema_time: what the JSON Schema validator costs (issue 19, item 7).
 *
 * A typical tool inputSchema: an object with 5 properties (a string with a
 * pattern, an enum, an integer with bounds, a boolean, an array of
 * strings), 2 of them required, additionalProperties false. On one core,
 * the median of RUNS runs of:
 *   validate ok     jschema_validate() of a conforming arguments object
 *   validate bad    the same with 3 violations (all reported)
 *   valid ok / bad  jschema_valid(), the yes/no fast path
 *   compile x1000   jschema_compile() + jschema_free() of 1,000 such
 *                   schemas, each with different property names (a
 *                   1,000-tool listing compiled from scratch)
 * The JSON values are parsed once, outside the timings.
 *
 *   make bench-build
 *   build/bench/jschema_time [RUNS]
 *
 * A benchmark, not a test: it prints figures and checks nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "checks/jschema.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static json_t *schema_n(int i)
{
	char text[1024];
	snprintf(text, sizeof text,
	         "{\"type\":\"object\",\"properties\":{"
	         "\"path%d\":{\"type\":\"string\",\"pattern\":\"^/[a-z0-9/._-]*$\",\"description\":\"a file\"},"
	         "\"mode%d\":{\"type\":\"string\",\"enum\":[\"read\",\"write\",\"append\"]},"
	         "\"limit%d\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
	         "\"recursive%d\":{\"type\":\"boolean\"},"
	         "\"tags%d\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":10}},"
	         "\"required\":[\"path%d\",\"mode%d\"],\"additionalProperties\":false}",
	         i, i, i, i, i, i, i);
	return json_loads(text, 0, NULL);
}

#define MEDIAN(label, reps, body)                                             \
	do {                                                                  \
		for (int r_ = 0; r_ < runs; r_++) {                           \
			double t0_ = now_ns();                                \
			for (int k_ = 0; k_ < (reps); k_++) {                 \
				body;                                         \
			}                                                     \
			t[r_] = (now_ns() - t0_) / (reps);                    \
		}                                                             \
		qsort(t, (size_t)runs, sizeof *t, cmp_d);                     \
		printf("%-16s %10.0f ns\n", label, t[runs / 2]);              \
	} while (0)

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1)
		runs = 1;
	double *t = calloc((size_t)runs, sizeof *t);
	json_t *schema = schema_n(0);
	json_t *ok = json_loads("{\"path0\":\"/srv/data/file.txt\",\"mode0\":\"read\",\"limit0\":50,"
	                        "\"recursive0\":true,\"tags0\":[\"a\",\"b\"]}", 0, NULL);
	json_t *bad = json_loads("{\"path0\":\"relative\",\"mode0\":\"delete\",\"limit0\":0}", 0, NULL);
	struct jschema_error why, errs[8];
	struct jschema *s = jschema_compile(schema, JSCHEMA_2020_12, 0, &why);
	if (s == NULL || ok == NULL || bad == NULL) {
		fprintf(stderr, "setup failed: %s\n", s ? "" : why.message);
		return 1;
	}
	volatile int sink = 0;
	printf("jschema, typical tool inputSchema (5 properties, required, enum, pattern), median of %d runs\n",
	       runs);
	MEDIAN("validate ok", 100000, sink += jschema_validate(s, ok, errs, 8));
	MEDIAN("validate bad", 100000, sink += jschema_validate(s, bad, errs, 8));
	MEDIAN("valid ok", 100000, sink += jschema_valid(s, ok));
	MEDIAN("valid bad", 100000, sink += jschema_valid(s, bad));

	json_t *many[1000];
	for (int i = 0; i < 1000; i++)
		many[i] = schema_n(i);
	for (int r = 0; r < runs; r++) {
		double t0 = now_ns();
		for (int i = 0; i < 1000; i++)
			jschema_free(jschema_compile(many[i], JSCHEMA_2020_12, 0, NULL));
		t[r] = now_ns() - t0;
	}
	qsort(t, (size_t)runs, sizeof *t, cmp_d);
	printf("%-16s %10.3f ms (%.1f us per schema)\n", "compile x1000", t[runs / 2] / 1e6,
	       t[runs / 2] / 1e3 / 1000);
	for (int i = 0; i < 1000; i++)
		json_decref(many[i]);
	jschema_free(s);
	json_decref(schema);
	json_decref(ok);
	json_decref(bad);
	free(t);
	return sink == 42 ? 2 : 0;
}
