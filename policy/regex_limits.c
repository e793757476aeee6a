/* regex_limits: see regex_limits.h. Split out of policy_load.c (issue 18):
 * pure, one entry point, nothing shared with the loader.
 *
 * glibc's regcomp unrolls repetitions before it builds the automaton:
 * E{m,n} becomes n copies of E (the last n-m nested as optional), E{m,}
 * m+1 copies, E+ two (E E*), so nested or stacked repetitions multiply.
 * It then computes, for every node, the nodes it reaches without reading
 * a character, which costs the square of such a chain, and copies those
 * nodes for every combination of anchors and word boundaries met on the
 * way, then looks each copy up among all the others. Measured (glibc
 * 2.36, -O2): "(a{1,1000}){1,1000}" 16 s and 8 GB, "a{1,32767}" 6 s and
 * 2 GB, "(a|b)" followed by 22 "+" 20 s and 6 GB, 20 copies of "(a*|()+)"
 * (a loop over something that matches the empty string) 16 s, 30 copies
 * of "(()){0,100}" over 5 s, 64 "\B" 12 s and 2 GB, 64 copies of 16 "\b"
 * and an "a" 3 s, 50 copies of 16 "(\b|\B)" and an "a" 221 s and 5 GB,
 * 16 copies of "(x?){0,15}\b" 7 s and 1.2 GB.
 * A policy file is trusted more than a request, but it is edited by hand
 * and reloaded by a running proxy, so regex_limits_check() refuses, before
 * regcomp sees them:
 *  - an interval bound above REGEX_LIMITS_MAX_BOUND;
 *  - a repetition operator right after another ("a**", "a+?", "a{2}{3}"):
 *    POSIX leaves these undefined, glibc nests them;
 *  - "*", "+" or "{m,}" applied to something that can match the empty
 *    string ("(a*)*", "(a|)+", "()*"): "*" or "?" alone says the same;
 *  - more than REGEX_LIMITS_MAX_NODES nodes once unrolled;
 *  - a chain of nodes reached one from another without reading a
 *    character of more than REGEX_LIMITS_MAX_CHAIN nodes once unrolled, or
 *    of more than REGEX_LIMITS_MAX_ACHAIN when it holds an anchor or a word
 *    boundary;
 *  - more than REGEX_LIMITS_MAX_ASSERTS anchors and word boundaries (^ $ \b
 *    \B \< \> \` \') in all once unrolled: "\b(one|two)\b", not
 *    "(\bone\b|\btwo\b)".
 * All of it is estimated from above in one pass, without building the
 * automaton: every piece (an atom, a bracket expression, a group, a
 * repetition of one) gets a summary, struct rx_piece, and the summary of
 * a sequence, an alternation or a repetition is computed from those of
 * its parts. The scan only has to find atoms, groups, alternatives and
 * repetitions; whatever it cannot make sense of counts as an atom and is
 * left to regcomp to report.
 */
#include "policy/regex_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Summary of a piece. "Reached" means without reading a character. */
struct rx_piece {
	size_t nodes;    /* nodes once unrolled (an atom 1, a group +1, "|" 1) */
	size_t asserts;  /* anchors and word boundaries once unrolled */
	int empty;       /* can match the empty string */
	size_t in_w;     /* nodes reached from its start, every alternative */
	size_t out_w;    /* longest chain inside it that reaches its end */
	int out_a;       /* a chain reaching its end may hold an assertion */
	int pass_a;      /* so may a way through it (when empty) */
};

static const struct rx_piece rx_epsilon = {0, 0, 1, 0, 0, 0, 0};

static size_t zmax(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* A chain of w nodes: 0 when within the limit. */
static int rx_over(size_t w)
{
	return w > REGEX_LIMITS_MAX_CHAIN;
}

/* s then p. Returns -1 when a chain across the junction is over the limit
 * (chains inside s and p were checked when they were made). */
static int rx_seq(struct rx_piece *s, const struct rx_piece *p)
{
	struct rx_piece r;
	if (rx_over(s->out_w + p->in_w))
		return -1;
	if (s->out_a && s->out_w + p->in_w > REGEX_LIMITS_MAX_ACHAIN)
		return -1;
	r.nodes = s->nodes + p->nodes;
	r.asserts = s->asserts + p->asserts;
	r.empty = s->empty && p->empty;
	r.in_w = s->in_w + (s->empty ? p->in_w : 0);
	r.out_w = zmax(p->out_w, p->empty ? s->out_w + p->in_w : 0);
	r.out_a = p->out_a || (p->empty && (s->out_a || p->pass_a));
	r.pass_a = r.empty && (s->pass_a || p->pass_a);
	*s = r;
	return 0;
}

/* g | p, alternatives side by side (the "|" itself is counted apart): a
 * chain into g reaches every alternative, one out of g comes from one. */
static void rx_alt(struct rx_piece *g, const struct rx_piece *p)
{
	g->nodes += p->nodes;
	g->asserts += p->asserts;
	g->empty = g->empty || p->empty;
	g->in_w += p->in_w;
	g->out_w = zmax(g->out_w, p->out_w);
	g->out_a = g->out_a || p->out_a;
	g->pass_a = g->pass_a || p->pass_a;
}

/* x? : one more node, which can be skipped. */
static void rx_opt(struct rx_piece *x)
{
	x->empty = 1;
	x->in_w += 1;
	x->nodes += 1;
}

/* p repeated lo..hi times (hi < 0: no upper bound), as glibc unrolls it:
 * lo copies, then hi-lo nested optional copies or one starred copy.
 * p cannot match the empty string when hi < 0 (refused before). Returns
 * -1 when a chain is over a limit. */
static int rx_repeat(struct rx_piece *p, long lo, long hi)
{
	struct rx_piece r = rx_epsilon, tail = rx_epsilon;
	for (long i = 0; i < lo; i++)
		if (rx_seq(&r, p) < 0)
			return -1;
	if (hi < 0) {
		/* The star node reaches its body's start and what follows;
		 * the body's end reaches the star. */
		size_t loop = p->out_w + 1 + p->in_w;
		if (rx_over(loop) || (p->asserts > 0 && loop > REGEX_LIMITS_MAX_ACHAIN))
			return -1;
		tail.nodes = p->nodes + 1;
		tail.asserts = p->asserts;
		tail.in_w = p->in_w + 1;
		tail.out_w = loop;
		tail.out_a = p->asserts > 0;
	}
	for (long i = lo; i < hi; i++) {
		/* (p tail)? */
		struct rx_piece x = *p;
		if (rx_seq(&x, &tail) < 0)
			return -1;
		rx_opt(&x);
		tail = x;
		if (rx_over(tail.in_w))
			return -1;
	}
	if (rx_seq(&r, &tail) < 0)
		return -1;
	if (lo == 0 && hi == 0) {
		/* glibc drops it; count it anyway */
		r.nodes = p->nodes;
		r.asserts = p->asserts;
	}
	*p = r;
	return rx_over(p->in_w) || rx_over(p->out_w) ? -1 : 0;
}

/* The end of the bracket expression opening at p ("[...]"): the closing
 * ']', or NULL when there is none (regcomp reports it). */
static const char *bracket_end(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']') /* first: a literal ']' */
		p++;
	while (*p && *p != ']') {
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			/* [:class:], [.coll.], [=equiv=]: up to the matching "x]" */
			char kind = p[1];
			const char *q = p + 2;
			while (*q && !(q[0] == kind && q[1] == ']'))
				q++;
			if (!*q)
				return NULL;
			p = q + 2;
		} else {
			p++;
		}
	}
	return *p ? p : NULL;
}

/* Reads an interval "{m}", "{m,}", "{m,n}" or "{,n}" at p. Returns its
 * length and sets *lo, *hi (hi = -1: no upper bound; both saturate above
 * 100000), or 0 when p holds no interval (glibc then reports an error). */
static size_t interval(const char *p, long *lo, long *hi)
{
	const char *q = p + 1;
	long m = 0, n = -1;
	int mdig = 0, ndig = 0, comma = 0;

	for (; *q >= '0' && *q <= '9'; q++, mdig++)
		if (m <= 100000)
			m = m * 10 + (*q - '0');
	if (*q == ',') {
		comma = 1;
		q++;
		if (*q >= '0' && *q <= '9')
			n = 0;
		for (; *q >= '0' && *q <= '9'; q++, ndig++)
			if (n <= 100000)
				n = n * 10 + (*q - '0');
	}
	if (*q != '}' || (mdig == 0 && ndig == 0))
		return 0;
	*lo = m;
	*hi = comma ? n : m;
	return (size_t)(q - p) + 1;
}

/* Anchors and GNU's word boundaries: atoms that match the empty string. */
static int is_assertion(const char *c)
{
	if (*c == '^' || *c == '$')
		return 1;
	return c[0] == '\\' && c[1] && strchr("bB<>`'", c[1]) != NULL;
}

/* One level of parentheses while scanning. */
struct rx_level {
	struct rx_piece alts;  /* the alternatives before the current one */
	int nalts;             /* how many ("|" seen at this level) */
	struct rx_piece seq;   /* the current alternative so far */
	struct rx_piece prev;  /* it before its last piece */
	struct rx_piece last;  /* its last piece (what a repetition repeats) */
	int has_last;          /* 0 right after "(" or "|" */
};

static void level_start(struct rx_level *v)
{
	memset(v, 0, sizeof *v);
	v->seq = rx_epsilon;
}

/* Appends piece p to the current alternative; -1 when over a limit. */
static int level_piece(struct rx_level *v, const struct rx_piece *p)
{
	v->prev = v->seq;
	v->last = *p;
	v->has_last = 1;
	if (rx_over(p->in_w) || rx_over(p->out_w))
		return -1;
	return rx_seq(&v->seq, p);
}

/* Everything at level v as one piece (the alternatives so far). */
static struct rx_piece level_all(const struct rx_level *v)
{
	struct rx_piece g = v->seq;
	if (v->nalts > 0) {
		g = v->alts;
		rx_alt(&g, &v->seq);
		g.nodes += (size_t)v->nalts;
	}
	return g;
}

int regex_limits_check(const char *rx, size_t skip, char *why, size_t whylen)
{
	size_t depth = 0, cap = 1;
	size_t outer = 0, outer_asserts = 0; /* at the levels around this one */
	int after_rep = 0; /* the previous token was a repetition */
	int rc = 0;

	for (const char *c = rx; *c; c++)
		cap += *c == '(';
	struct rx_level *lv = malloc(cap * sizeof *lv);
	if (lv == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	level_start(&lv[0]);
	for (const char *c = rx; *c && rc == 0; c++) {
		size_t at = skip + (size_t)(c - rx);
		struct rx_level *cur = &lv[depth];
		size_t len = 0;
		long lo = 0, hi = 0;
		int chain_ok = 1;

		if (*c == '*') {
			len = 1, lo = 0, hi = -1;
		} else if (*c == '?') {
			len = 1, lo = 0, hi = 1;
		} else if (*c == '+') {
			len = 1, lo = 1, hi = -1;
		} else if (*c == '{' && (len = interval(c, &lo, &hi)) > 0) {
			if (lo > REGEX_LIMITS_MAX_BOUND || hi > REGEX_LIMITS_MAX_BOUND) {
				snprintf(why, whylen,
				         "repetition \"%.*s\" at offset %zu: a bound above %d is not "
				         "allowed", (int)(len > 24 ? 24 : len), c, at,
				         REGEX_LIMITS_MAX_BOUND);
				rc = -1;
				break;
			}
			if (hi >= 0 && hi < lo)
				hi = lo; /* "{3,2}": regcomp refuses it */
		}
		if (len > 0) {
			if (after_rep) {
				snprintf(why, whylen,
				         "repetition \"%.*s\" at offset %zu follows another one "
				         "(\"a**\", \"a+?\", \"a{2}{3}\" are not allowed; group the "
				         "inner one)", (int)(len > 24 ? 24 : len), c, at);
				rc = -1;
				break;
			}
			after_rep = 1;
			if (cur->has_last) {
				struct rx_piece p = cur->last;
				if (hi < 0 && p.empty) {
					snprintf(why, whylen,
					         "repetition \"%.*s\" at offset %zu repeats something "
					         "that matches the empty string (as in \"(a*)*\", "
					         "\"(a|)+\"); drop one of the repetitions",
					         (int)(len > 24 ? 24 : len), c, at);
					rc = -1;
					break;
				}
				cur->seq = cur->prev;
				chain_ok = rx_repeat(&p, lo, hi) == 0 && level_piece(cur, &p) == 0;
			}
			/* else: nothing to repeat, regcomp reports it */
			c += len - 1;
		} else if (*c == '(') {
			after_rep = 0;
			struct rx_piece all = level_all(cur);
			outer += all.nodes;
			outer_asserts += all.asserts;
			cur = &lv[++depth];
			level_start(cur);
		} else if (*c == '|') {
			after_rep = 0;
			if (cur->nalts == 0)
				cur->alts = cur->seq;
			else
				rx_alt(&cur->alts, &cur->seq);
			cur->nalts++;
			cur->seq = rx_epsilon;
			cur->has_last = 0;
		} else if (*c == ')' && depth > 0) {
			after_rep = 0;
			struct rx_piece g = level_all(cur);
			g.nodes++;
			g.in_w++;
			cur = &lv[--depth];
			struct rx_piece all = level_all(cur);
			outer -= all.nodes;
			outer_asserts -= all.asserts;
			chain_ok = level_piece(cur, &g) == 0;
		} else {
			struct rx_piece p = {1, 0, 0, 1, 0, 0, 0};
			after_rep = 0;
			if (is_assertion(c))
				p.asserts = 1, p.empty = 1, p.pass_a = 1;
			if (*c == '[') {
				const char *e = bracket_end(c);
				c = e ? e : c + strlen(c) - 1;
			} else if (*c == '\\' && c[1]) {
				c++;
			}
			chain_ok = level_piece(cur, &p) == 0;
		}
		struct rx_piece all = level_all(cur);
		if (outer_asserts + all.asserts > REGEX_LIMITS_MAX_ASSERTS) {
			snprintf(why, whylen,
			         "too complex: more than %d anchors and word boundaries once "
			         "repetitions are unrolled (by offset %zu); write \"\\b(a|b)\\b\", not "
			         "\"(\\ba\\b|\\bb\\b)\"", REGEX_LIMITS_MAX_ASSERTS, at);
			rc = -1;
		} else if (!chain_ok) {
			snprintf(why, whylen,
			         "too complex by offset %zu: a chain of more than %d nodes (%d "
			         "with an anchor or word boundary) that match the empty string "
			         "one after another once repetitions are unrolled",
			         at, REGEX_LIMITS_MAX_CHAIN, REGEX_LIMITS_MAX_ACHAIN);
			rc = -1;
		} else if (outer + all.nodes > REGEX_LIMITS_MAX_NODES) {
			snprintf(why, whylen,
			         "too complex: more than %d nodes once repetitions are unrolled "
			         "(by offset %zu); nest fewer repetitions or use smaller counts",
			         REGEX_LIMITS_MAX_NODES, at);
			rc = -1;
		}
	}
	free(lv);
	return rc;
}
