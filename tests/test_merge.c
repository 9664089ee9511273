/*
 * test_merge.c - three-way merge against a model merge: disjoint, convergent and conflicting
 * edits, every resolver, callbacks, deletes against updates, fast paths. A merged tree must have
 * the same root id as the tree built directly from the model's merged records.
 */
#include "internal.h"
#include "lib/model.h"
#include "prolly.h"
#include "ptest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- edit sets ---- */

typedef struct edset {
	prolly_edit *e;
	size_t n, cap;
	void **owned;
	size_t nowned, capo;
} edset;

static void *keep(edset *s, const void *p, size_t n)
{
	if (s->nowned == s->capo) {
		s->capo = s->capo ? 2 * s->capo : 64;
		s->owned = realloc(s->owned, s->capo * sizeof(void *));
	}
	void *c = malloc(n ? n : 1);
	if (n)
		memcpy(c, p, n);
	s->owned[s->nowned++] = c;
	return c;
}

static void add_edit(edset *s, prolly_op op, const void *k, size_t kl, const void *v, size_t vl)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->e = realloc(s->e, s->cap * sizeof(*s->e));
	}
	prolly_edit *e = &s->e[s->n++];
	memset(e, 0, sizeof(*e));
	e->op = op;
	e->key.data = keep(s, k, kl);
	e->key.size = kl;
	if (op == PROLLY_PUT) {
		e->value.data = keep(s, v, vl);
		e->value.size = vl;
	}
}

static void edset_free(edset *s)
{
	for (size_t i = 0; i < s->nowned; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->e);
	memset(s, 0, sizeof(*s));
}

/* One random edit of m (update, delete or insert). */
static void random_edit(edset *s, tm_rng *r, const tm_model *m)
{
	unsigned char key[TM_KEY_MAX];
	static unsigned char v[TM_VAL_BIG];
	uint64_t what = tm_rng_below(r, 3);
	size_t vl = tm_gen_value(r, v, 2000);
	if (m->n && what == 0) {
		const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
		add_edit(s, PROLLY_PUT, rec->k, rec->klen, v, vl);
	} else if (m->n && what == 1) {
		const tm_rec *rec = &m->r[tm_rng_below(r, m->n)];
		add_edit(s, PROLLY_DEL, rec->k, rec->klen, NULL, 0);
	} else {
		size_t kl = tm_gen_key(r, key);
		add_edit(s, PROLLY_PUT, key, kl, v, vl);
	}
}

/* ---- the model merge ---- */

typedef struct side {
	int exists;
	const unsigned char *v;
	size_t vlen;
} side;

static int side_eq(side a, side b)
{
	return a.exists == b.exists &&
	       (!a.exists || (a.vlen == b.vlen && (!a.vlen || !memcmp(a.v, b.v, a.vlen))));
}

static side side_of(const tm_model *m, const tm_rec *key)
{
	side s = {0, NULL, 0};
	const tm_rec *r = tm_model_get(m, key->k, key->klen);
	if (r) {
		s.exists = 1;
		s.v = r->v;
		s.vlen = r->vlen;
	}
	return s;
}

typedef struct xconf {
	const tm_rec *key;
	side b, o, t;
} xconf;

typedef struct expect {
	tm_model out;
	xconf *conf;
	size_t nconf;
	prolly_merge_stats st;
} expect;

/* Merges models with resolver OURS, THEIRS or FAIL (conflicts keep ours in `out` and are
 * listed). */
static void model_merge(expect *x, const tm_model *b, const tm_model *o, const tm_model *t,
                        int resolver)
{
	tm_model_init(&x->out);
	tm_model_copy(&x->out, o);
	x->conf = malloc((t->n + b->n + 1) * sizeof(*x->conf));
	x->nconf = 0;
	memset(&x->st, 0, sizeof(x->st));
	/* keys theirs changed: those of t and those of b, walked together in key order (a search of
	 * b and t for every key of both was most of this model's time under ASan) */
	size_t it = 0, ib = 0;
	while (it < t->n || ib < b->n) {
		int c = it >= t->n   ? 1
		        : ib >= b->n ? -1
		                     : prolly__keycmp(t->r[it].k, t->r[it].klen, b->r[ib].k, b->r[ib].klen);
		const tm_rec *k = c <= 0 ? &t->r[it] : &b->r[ib]; /* t's record when both hold it */
		side st = {0, NULL, 0}, sb = {0, NULL, 0};
		if (c <= 0)
			st = (side){1, t->r[it].v, t->r[it].vlen}, it++;
		if (c >= 0)
			sb = (side){1, b->r[ib].v, b->r[ib].vlen}, ib++;
		if (side_eq(sb, st))
			continue;
		side so = side_of(o, k);
		if (side_eq(so, sb)) {
			x->st.applied++;
		} else if (side_eq(so, st)) {
			x->st.convergent++;
			continue;
		} else {
			x->st.conflicts++;
			x->conf[x->nconf++] = (xconf){k, sb, so, st};
			if (resolver != PROLLY_RESOLVE_THEIRS)
				continue;
		}
		if (st.exists)
			tm_model_put(&x->out, k->k, k->klen, st.v, st.vlen);
		else
			tm_model_del(&x->out, k->k, k->klen);
	}
	/* the conflicts are in key order: the walk visits the keys in order */
}

static void expect_free(expect *x)
{
	tm_model_dispose(&x->out);
	free(x->conf);
}

static int slice_side_eq(prolly_slice s, int exists, side w)
{
	if (exists != w.exists)
		return 0;
	if (!exists)
		return s.data == NULL;
	return s.data && s.size == w.vlen && (!w.vlen || !memcmp(s.data, w.v, w.vlen));
}

typedef struct reporter {
	const expect *x;
	size_t got;
	int bad;
} reporter;

static int on_conflict(void *payload, const prolly_conflict *c)
{
	reporter *r = payload;
	if (r->got >= r->x->nconf) {
		r->bad = 1;
		return 0;
	}
	const xconf *w = &r->x->conf[r->got++];
	if (c->key.size != w->key->klen ||
	    (c->key.size && memcmp(c->key.data, w->key->k, c->key.size)) ||
	    !slice_side_eq(c->base, c->base_exists, w->b) ||
	    !slice_side_eq(c->ours, c->ours_exists, w->o) ||
	    !slice_side_eq(c->theirs, c->theirs_exists, w->t)) {
		fprintf(stderr, "  conflict %zu: key %s differs from the model (key %s)\n", r->got - 1,
		        tm_bhex(c->key.data, c->key.size), tm_bhex(w->key->k, w->key->klen));
		r->bad = 1;
	}
	return 0;
}

/* Three trees in one txn from a base model and two edit sets. */
typedef struct scene {
	prolly_db *db;
	prolly_txn *txn;
	const tm_model *mb; /* the caller's base model, borrowed: it outlives the scene */
	tm_model mo, mt;
	prolly_id base, ours, theirs;
} scene;

static int scene_make(scene *s, prolly_db *db, const tm_model *base, const edset *eo,
                      const edset *et)
{
	memset(s, 0, sizeof(*s));
	s->db = db;
	s->mb = base;
	tm_model_init(&s->mo);
	tm_model_init(&s->mt);
	tm_model_copy(&s->mo, base);
	tm_model_copy(&s->mt, base);
	tm_model_apply(&s->mo, eo->e, eo->n);
	tm_model_apply(&s->mt, et->e, et->n);
	int rc = prolly_txn_begin(&s->txn, db);
	if (!rc)
		rc = tm_build(&s->base, s->txn, base);
	if (!rc)
		rc = prolly_edit_tree(&s->ours, s->txn, &s->base, eo->e, eo->n);
	if (!rc)
		rc = prolly_edit_tree(&s->theirs, s->txn, &s->base, et->e, et->n);
	return rc;
}

static void scene_free(scene *s)
{
	prolly_txn_free(s->txn);
	tm_model_dispose(&s->mo);
	tm_model_dispose(&s->mt);
}

static uint64_t seen_conflicts, seen_convergent, seen_applied;

/* Merges with resolver and checks result, stats and reported conflicts against the model. */
static void check_merge(scene *s, int resolver, uint64_t seed, const char *what)
{
	expect x;
	model_merge(&x, s->mb, &s->mo, &s->mt, resolver);
	seen_conflicts += x.st.conflicts;
	seen_convergent += x.st.convergent;
	seen_applied += x.st.applied;
	reporter rep = {&x, 0, 0};
	prolly_merge_options opts = PROLLY_MERGE_OPTIONS_INIT;
	opts.resolve = (prolly_resolver)resolver;
	opts.on_conflict = on_conflict;
	opts.payload = &rep;
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_id out, sentinel;
	memset(&sentinel, 0x77, sizeof(sentinel));
	out = sentinel;
	/* The preview first: it must decide, report and count as the merge does, making nothing. */
	reporter prep = {&x, 0, 0};
	prolly_merge_stats pst = PROLLY_MERGE_STATS_INIT;
	opts.payload = &prep;
	int prc = prolly_merge_preview(&pst, s->db, &s->base, &s->ours, &s->theirs, &opts);
	opts.payload = &rep;
	int rc = prolly_merge(&out, &st, s->txn, &s->base, &s->ours, &s->theirs, &opts);
	PT_CHECKF(prc == rc && prep.got == rep.got && !prep.bad && pst.applied == st.applied &&
	              pst.convergent == st.convergent && pst.conflicts == st.conflicts,
	          "seed %#llx %s: preview rc %d, %zu reported, stats %llu/%llu/%llu; merge rc %d, "
	          "%zu reported, stats %llu/%llu/%llu",
	          (unsigned long long)seed, what, prc, prep.got, (unsigned long long)pst.applied,
	          (unsigned long long)pst.convergent, (unsigned long long)pst.conflicts, rc, rep.got,
	          (unsigned long long)st.applied, (unsigned long long)st.convergent,
	          (unsigned long long)st.conflicts);
	if (resolver == PROLLY_RESOLVE_FAIL && x.nconf) {
		PT_CHECKF(rc == PROLLY_EMERGE, "seed %#llx %s: rc %d (%s), %zu conflicts expected",
		          (unsigned long long)seed, what, rc, prolly_last_error(), x.nconf);
		PT_CHECKF(prolly_id_equal(&out, &sentinel), "seed %#llx %s: out_root written",
		          (unsigned long long)seed, what);
		PT_CHECKF(rep.got == x.nconf && !rep.bad, "seed %#llx %s: %zu conflicts reported, want %zu",
		          (unsigned long long)seed, what, rep.got, x.nconf);
		PT_CHECKF(st.conflicts == x.nconf, "seed %#llx %s: stats.conflicts %llu",
		          (unsigned long long)seed, what, (unsigned long long)st.conflicts);
	} else {
		PT_CHECKF(rc == 0, "seed %#llx %s: rc %d (%s)", (unsigned long long)seed, what, rc,
		          prolly_last_error());
		PT_CHECKF(rep.got == 0, "seed %#llx %s: on_conflict called", (unsigned long long)seed,
		          what);
		if (rc == 0) {
			prolly_id want;
			PT_CHECK_RC(tm_build(&want, s->txn, &x.out), 0);
			PT_CHECKF(prolly_id_equal(&out, &want), "seed %#llx %s: merged root %s, model tree %s",
			          (unsigned long long)seed, what, tm_hex(&out), tm_hex(&want));
			if (!prolly_id_equal(&out, &want))
				tm_tree_check(s->db, &out, &x.out, what);
			PT_CHECKF(st.applied == x.st.applied && st.convergent == x.st.convergent &&
			              st.conflicts == x.st.conflicts,
			          "seed %#llx %s: stats %llu/%llu/%llu, want %llu/%llu/%llu",
			          (unsigned long long)seed, what, (unsigned long long)st.applied,
			          (unsigned long long)st.convergent, (unsigned long long)st.conflicts,
			          (unsigned long long)x.st.applied, (unsigned long long)x.st.convergent,
			          (unsigned long long)x.st.conflicts);
		}
	}
	expect_free(&x);
}

/* Edits for a scene: nt for theirs, no for ours; `overlap` of ours' edits reuse theirs' keys
 * (half with theirs' exact edit: convergent, half with another edit: conflicts). */
static void make_edits(edset *eo, edset *et, tm_rng *r, const tm_model *base, size_t nt, size_t no,
                       size_t overlap, int disjoint)
{
	static unsigned char v[TM_VAL_BIG];
	memset(eo, 0, sizeof(*eo));
	memset(et, 0, sizeof(*et));
	for (size_t i = 0; i < nt; i++)
		random_edit(et, r, base);
	for (size_t i = 0; i < no; i++) {
		if (i < overlap && et->n) {
			const prolly_edit *te = &et->e[tm_rng_below(r, et->n)];
			if (i % 2 == 0) {
				add_edit(eo, te->op, te->key.data, te->key.size, te->value.data, te->value.size);
			} else if (tm_rng_chance(r, 1, 3)) {
				add_edit(eo, PROLLY_DEL, te->key.data, te->key.size, NULL, 0);
			} else {
				size_t vl = tm_gen_value(r, v, 0);
				add_edit(eo, PROLLY_PUT, te->key.data, te->key.size, v, vl);
			}
			continue;
		}
		random_edit(eo, r, base);
		if (disjoint) { /* drop it if theirs touches the key */
			prolly_edit *oe = &eo->e[eo->n - 1];
			for (size_t j = 0; j < et->n; j++)
				if (et->e[j].key.size == oe->key.size &&
				    !memcmp(et->e[j].key.data, oe->key.data, oe->key.size)) {
					eo->n--;
					break;
				}
		}
	}
}

PT_TEST(merge_disjoint_edits)
{
	uint64_t seed = PT_SEED();
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_rng r;
	tm_rng_seed(&r, seed);
	static const size_t sizes[][3] = {{0, 1, 1},      {1, 1, 1},        {300, 5, 7},
	                                  {5000, 1, 1},   {5000, 200, 300}, {20000, 3000, 2000},
	                                  {2000, 2000, 0}};
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		tm_model base;
		edset eo, et;
		scene s;
		tm_model_init(&base);
		tm_random_model(&base, &r, sizes[t][0]);
		make_edits(&eo, &et, &r, &base, sizes[t][1], sizes[t][2], 0, 1);
		PT_CHECK_RC(scene_make(&s, db, &base, &eo, &et), 0);
		char what[64];
		snprintf(what, sizeof(what), "disjoint case %zu", t);
		check_merge(&s, PROLLY_RESOLVE_FAIL, seed, what);
		/* and the mirror: ours and theirs swapped */
		prolly_id tmp = s.ours;
		s.ours = s.theirs;
		s.theirs = tmp;
		tm_model tm = s.mo;
		s.mo = s.mt;
		s.mt = tm;
		check_merge(&s, PROLLY_RESOLVE_FAIL, seed, what);
		scene_free(&s);
		edset_free(&eo);
		edset_free(&et);
		tm_model_dispose(&base);
	}
	prolly_close(db);
}

PT_TEST(merge_convergent_and_conflicting_all_resolvers)
{
	uint64_t seed = PT_SEED();
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_rng r;
	tm_rng_seed(&r, seed ^ 0x99);
	seen_conflicts = seen_convergent = seen_applied = 0;
	static const size_t sizes[][4] = {
	    {50, 3, 3, 2},          {3000, 40, 40, 20},       {3000, 40, 40, 40},
	    {20000, 500, 700, 300}, {20000, 2000, 1000, 600}, {0, 5, 5, 4}};
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		tm_model base;
		edset eo, et;
		scene s;
		tm_model_init(&base);
		tm_random_model(&base, &r, sizes[t][0]);
		make_edits(&eo, &et, &r, &base, sizes[t][1], sizes[t][2], sizes[t][3], 0);
		PT_CHECK_RC(scene_make(&s, db, &base, &eo, &et), 0);
		static const int resolvers[] = {PROLLY_RESOLVE_FAIL, PROLLY_RESOLVE_OURS,
		                                PROLLY_RESOLVE_THEIRS};
		static const char *names[] = {"fail", "ours", "theirs"};
		for (int k = 0; k < 3; k++) {
			char what[64];
			snprintf(what, sizeof(what), "case %zu resolver %s", t, names[k]);
			check_merge(&s, resolvers[k], seed, what);
		}
		scene_free(&s);
		edset_free(&eo);
		edset_free(&et);
		tm_model_dispose(&base);
	}
	PT_CHECKF(seen_conflicts > 100 && seen_convergent > 100 && seen_applied > 1000,
	          "the cases exercise too little: %llu conflicts, %llu convergent, %llu applied",
	          (unsigned long long)seen_conflicts, (unsigned long long)seen_convergent,
	          (unsigned long long)seen_applied);
	prolly_close(db);
}

PT_TEST(merge_delete_vs_update)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_model base;
	edset eo, et;
	scene s;
	char k[16];
	tm_model_init(&base);
	for (int i = 0; i < 1000; i++) {
		int kl = snprintf(k, sizeof(k), "k%05d", i);
		tm_model_put(&base, k, (size_t)kl, "base", 4);
	}
	memset(&eo, 0, sizeof(eo));
	memset(&et, 0, sizeof(et));
	add_edit(&eo, PROLLY_DEL, "k00010", 6, NULL, 0); /* ours deletes, theirs updates */
	add_edit(&et, PROLLY_PUT, "k00010", 6, "T", 1);
	add_edit(&eo, PROLLY_PUT, "k00020", 6, "O", 1); /* ours updates, theirs deletes */
	add_edit(&et, PROLLY_DEL, "k00020", 6, NULL, 0);
	add_edit(&eo, PROLLY_DEL, "k00030", 6, NULL, 0); /* both delete: convergent */
	add_edit(&et, PROLLY_DEL, "k00030", 6, NULL, 0);
	add_edit(&eo, PROLLY_PUT, "new", 3, "o", 1); /* both add differently */
	add_edit(&et, PROLLY_PUT, "new", 3, "t", 1);
	add_edit(&eo, PROLLY_PUT, "same", 4, "", 0); /* both add the same empty value */
	add_edit(&et, PROLLY_PUT, "same", 4, "", 0);
	add_edit(&et, PROLLY_DEL, "k00500", 6, NULL, 0); /* only theirs */
	add_edit(&et, PROLLY_PUT, "k00600", 6, "", 0);   /* only theirs: empty value */
	PT_REQUIRE(scene_make(&s, db, &base, &eo, &et) == 0);
	check_merge(&s, PROLLY_RESOLVE_FAIL, 0, "delete vs update: fail");
	check_merge(&s, PROLLY_RESOLVE_OURS, 0, "delete vs update: ours");
	check_merge(&s, PROLLY_RESOLVE_THEIRS, 0, "delete vs update: theirs");
	expect x;
	model_merge(&x, s.mb, &s.mo, &s.mt, PROLLY_RESOLVE_FAIL);
	PT_CHECK(x.nconf == 3 && x.st.convergent == 2 && x.st.applied == 2);
	expect_free(&x);
	scene_free(&s);
	edset_free(&eo);
	edset_free(&et);
	tm_model_dispose(&base);
	prolly_close(db);
}

/* Callback: both present -> ours + theirs concatenated; otherwise delete; keys starting with
 * 'x' (when asked) are left unresolved. */
typedef struct cbstate {
	prolly_buf vals[64];
	int nvals;
	int leave_x;
	int calls;
	int fail_with;
} cbstate;

static int resolve_cb(void *payload, const prolly_conflict *c, prolly_slice *out, int *exists)
{
	cbstate *s = payload;
	s->calls++;
	if (s->fail_with)
		return s->fail_with;
	if (s->leave_x && c->key.size && ((const char *)c->key.data)[0] == 'x')
		return PROLLY_EMERGE;
	if (c->ours_exists && c->theirs_exists) {
		prolly_buf *b = &s->vals[s->nvals++];
		b->size = 0;
		b->ptr = malloc(c->ours.size + c->theirs.size + 1);
		memcpy(b->ptr, c->ours.data, c->ours.size);
		memcpy(b->ptr + c->ours.size, c->theirs.data, c->theirs.size);
		out->data = b->ptr;
		out->size = c->ours.size + c->theirs.size;
		*exists = 1;
	} else {
		*exists = 0;
	}
	return 0;
}

static int count_conflict(void *payload, const prolly_conflict *c)
{
	(void)c;
	(*(int *)payload)++;
	return 0;
}

PT_TEST(merge_callback_resolution)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_model base;
	edset eo, et;
	scene s;
	char k[16];
	tm_model_init(&base);
	for (int i = 0; i < 2000; i++) {
		int kl = snprintf(k, sizeof(k), "%c%05d", i % 2 ? 'k' : 'x', i);
		tm_model_put(&base, k, (size_t)kl, "base", 4);
	}
	memset(&eo, 0, sizeof(eo));
	memset(&et, 0, sizeof(et));
	add_edit(&eo, PROLLY_PUT, "k00001", 6, "O1", 2);
	add_edit(&et, PROLLY_PUT, "k00001", 6, "T1", 2);
	add_edit(&eo, PROLLY_DEL, "k00003", 6, NULL, 0);
	add_edit(&et, PROLLY_PUT, "k00003", 6, "T3", 2);
	add_edit(&eo, PROLLY_PUT, "x00004", 6, "O4", 2);
	add_edit(&et, PROLLY_PUT, "x00004", 6, "T4", 2);
	add_edit(&et, PROLLY_PUT, "k00005", 6, "T5", 2);
	add_edit(&eo, PROLLY_PUT, "k00007", 6, "O7", 2);
	PT_REQUIRE(scene_make(&s, db, &base, &eo, &et) == 0);

	cbstate cs;
	memset(&cs, 0, sizeof(cs));
	prolly_merge_options opts = PROLLY_MERGE_OPTIONS_INIT;
	opts.resolve = PROLLY_RESOLVE_CALLBACK;
	opts.resolve_fn = resolve_cb;
	opts.payload = &cs;
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_id out;
	/* the preview asks the callback the same questions, in the same order */
	PT_CHECK_RC(prolly_merge_preview(&st, db, &s.base, &s.ours, &s.theirs, &opts), 0);
	PT_CHECK(cs.calls == 3 && st.conflicts == 3 && st.applied == 1 && st.convergent == 0);
	cs.calls = 0;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, &opts), 0);
	PT_CHECK(cs.calls == 3 && st.conflicts == 3 && st.applied == 1 && st.convergent == 0);
	tm_model want;
	tm_model_init(&want);
	tm_model_copy(&want, &s.mo);
	tm_model_put(&want, "k00001", 6, "O1T1", 4);
	tm_model_del(&want, "k00003", 6);
	tm_model_put(&want, "x00004", 6, "O4T4", 4);
	tm_model_put(&want, "k00005", 6, "T5", 2);
	prolly_id wroot;
	PT_CHECK_RC(tm_build(&wroot, s.txn, &want), 0);
	PT_CHECK(prolly_id_equal(&out, &wroot));
	tm_model_dispose(&want);

	/* leave 'x' keys unresolved: the merge fails, reports exactly one conflict */
	int reported = 0;
	prolly_id untouched;
	memset(&untouched, 1, sizeof(untouched));
	out = untouched;
	cs.leave_x = 1;
	cs.calls = 0;
	opts.on_conflict = count_conflict;
	opts.payload = &cs;
	/* on_conflict shares the payload: count through a second options block */
	prolly_merge_options o2 = opts;
	o2.on_conflict = NULL;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, &o2), PROLLY_EMERGE);
	PT_CHECK(prolly_id_equal(&out, &untouched));
	(void)reported;

	/* an error from the callback aborts the merge with that error */
	cs.leave_x = 0;
	cs.fail_with = PROLLY_ESTORE;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, &o2), PROLLY_ESTORE);
	PT_CHECK(prolly_id_equal(&out, &untouched));
	PT_CHECK_RC(prolly_merge_preview(&st, db, &s.base, &s.ours, &s.theirs, &o2), PROLLY_ESTORE);

	/* CALLBACK without a function is a bad argument */
	o2.resolve_fn = NULL;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, &o2), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_merge_preview(&st, db, &s.base, &s.ours, &s.theirs, &o2), PROLLY_EINVAL);
	o2.resolve = (prolly_resolver)99;
	PT_CHECK_RC(prolly_merge_preview(&st, db, &s.base, &s.ours, &s.theirs, &o2), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_merge_preview(&st, NULL, &s.base, &s.ours, &s.theirs, NULL), PROLLY_EINVAL);
	PT_CHECK_RC(prolly_merge_preview(&st, db, &s.base, NULL, &s.theirs, NULL), PROLLY_EINVAL);

	/* FAIL with the counting reporter */
	prolly_merge_options o3 = PROLLY_MERGE_OPTIONS_INIT;
	o3.on_conflict = count_conflict;
	o3.payload = &reported;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, &o3), PROLLY_EMERGE);
	PT_CHECK(reported == 3);
	reported = 0;
	PT_CHECK_RC(prolly_merge_preview(NULL, db, &s.base, &s.ours, &s.theirs, &o3), PROLLY_EMERGE);
	PT_CHECK(reported == 3);
	PT_CHECK_RC(prolly_merge(&out, NULL, s.txn, &s.base, &s.ours, &s.theirs, NULL), PROLLY_EMERGE);

	for (int i = 0; i < cs.nvals; i++)
		prolly_buf_dispose(&cs.vals[i]);
	scene_free(&s);
	edset_free(&eo);
	edset_free(&et);
	tm_model_dispose(&base);
	prolly_close(db);
}

PT_TEST(merge_fast_paths)
{
	prolly_db *db = tm_open_mem((size_t)16 << 20);
	tm_rng r;
	tm_model base;
	edset eo, et;
	scene s;
	tm_rng_seed(&r, PT_SEED() + 3);
	tm_model_init(&base);
	tm_random_model(&base, &r, 4000);
	make_edits(&eo, &et, &r, &base, 30, 20, 0, 1);
	PT_REQUIRE(scene_make(&s, db, &base, &eo, &et) == 0);
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_id out;
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge(&out, NULL, s.txn, &s.base, &s.ours, &s.base, NULL), 0);
	PT_CHECK(prolly_id_equal(&out, &s.ours));
	PT_CHECK_RC(prolly_merge(&out, NULL, s.txn, &s.base, &s.base, &s.theirs, NULL), 0);
	PT_CHECK(prolly_id_equal(&out, &s.theirs));
	PT_CHECK_RC(prolly_merge(&out, NULL, s.txn, &s.base, &s.theirs, &s.theirs, NULL), 0);
	PT_CHECK(prolly_id_equal(&out, &s.theirs));
	prolly_stats ts = PROLLY_STATS_INIT;
	prolly_thread_stats(&ts);
	PT_CHECK(ts.cache_hits + ts.cache_misses == 0); /* no node looked at */
	/* with stats, the fast paths still count */
	expect x;
	model_merge(&x, s.mb, s.mb, &s.mt, PROLLY_RESOLVE_FAIL);
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.base, &s.theirs, NULL), 0);
	PT_CHECK(st.applied == x.st.applied && st.conflicts == 0);
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.theirs, &s.theirs, NULL), 0);
	PT_CHECK(st.convergent == x.st.applied && st.applied == 0);
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.base, NULL), 0);
	PT_CHECK(st.applied == 0 && st.convergent == 0 && st.conflicts == 0);
	expect_free(&x);
	PT_CHECK_RC(prolly_merge(NULL, &st, s.txn, &s.base, &s.ours, &s.base, NULL), PROLLY_EINVAL);
	scene_free(&s);
	edset_free(&eo);
	edset_free(&et);
	tm_model_dispose(&base);
	prolly_close(db);
}

/* A preview of a clean merge reads no more than the merge reads, and hands the store
 * nothing: it makes no node (the merge of the same trees makes hundreds). */
PT_TEST(merge_preview_makes_nothing)
{
	prolly_db *db = tm_open_mem((size_t)64 << 20);
	tm_model base;
	edset eo, et;
	scene s;
	tm_rng r;
	tm_rng_seed(&r, 0x5eed);
	tm_model_init(&base);
	tm_random_model(&base, &r, 20000);
	make_edits(&eo, &et, &r, &base, 3000, 2000, 0, 1);
	PT_REQUIRE(scene_make(&s, db, &base, &eo, &et) == 0);
	PT_REQUIRE(prolly_txn_commit(s.txn, NULL, 0) == 0);
	prolly_txn_free(s.txn);
	s.txn = NULL;

	prolly_merge_stats pst = PROLLY_MERGE_STATS_INIT, mst = PROLLY_MERGE_STATS_INIT;
	prolly_stats ps = PROLLY_STATS_INIT, ms = PROLLY_STATS_INIT;
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge_preview(&pst, db, &s.base, &s.ours, &s.theirs, NULL), 0);
	prolly_thread_stats(&ps);

	prolly_id out;
	PT_REQUIRE(prolly_txn_begin(&s.txn, db) == 0);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	PT_CHECK_RC(prolly_merge(&out, &mst, s.txn, &s.base, &s.ours, &s.theirs, NULL), 0);
	PT_CHECK_RC(prolly_txn_commit(s.txn, NULL, 0), 0);
	prolly_thread_stats(&ms);

	PT_CHECKF(pst.applied > 2000 && pst.applied == mst.applied && pst.conflicts == 0 &&
	              pst.convergent == mst.convergent,
	          "preview %llu/%llu/%llu, merge %llu/%llu/%llu", (unsigned long long)pst.applied,
	          (unsigned long long)pst.convergent, (unsigned long long)pst.conflicts,
	          (unsigned long long)mst.applied, (unsigned long long)mst.convergent,
	          (unsigned long long)mst.conflicts);
	PT_CHECKF(ps.nodes_written == 0 && ps.store_writes == 0, "preview wrote %llu nodes",
	          (unsigned long long)ps.nodes_written);
	PT_CHECKF(ms.nodes_written > 100, "the merge wrote %llu nodes",
	          (unsigned long long)ms.nodes_written);
	PT_CHECKF(ps.nodes_read <= ms.nodes_read, "preview read %llu nodes, the merge %llu",
	          (unsigned long long)ps.nodes_read, (unsigned long long)ms.nodes_read);
	scene_free(&s);
	edset_free(&eo);
	edset_free(&et);
	tm_model_dispose(&base);
	prolly_close(db);
}

/* The merge reads in proportion to theirs' changes, not to the tree or to ours' changes. */
PT_TEST(merge_cost_follows_theirs)
{
	prolly_db *db = tm_open_mem((size_t)256 << 20);
	tm_model base;
	edset eo, et;
	scene s;
	char k[32];
	tm_model_init(&base);
	for (int i = 0; i < 200000; i++) {
		int kl = snprintf(k, sizeof(k), "k%08d", i);
		tm_model_put(&base, k, (size_t)kl, "value", 5);
	}
	memset(&eo, 0, sizeof(eo));
	memset(&et, 0, sizeof(et));
	for (int i = 0; i < 20000; i++) { /* ours: many changes */
		int kl = snprintf(k, sizeof(k), "k%08d", i * 7);
		add_edit(&eo, PROLLY_PUT, k, (size_t)kl, "ours", 4);
	}
	add_edit(&et, PROLLY_PUT, "k00100001", 9, "theirs", 6);
	PT_REQUIRE(scene_make(&s, db, &base, &eo, &et) == 0);
	PT_REQUIRE(prolly_txn_commit(s.txn, NULL, 0) == 0);
	prolly_txn_free(s.txn);
	PT_REQUIRE(prolly_txn_begin(&s.txn, db) == 0);
	prolly_db_cache_clear(db);
	prolly_thread_stats_reset();
	prolly_merge_stats st = PROLLY_MERGE_STATS_INIT;
	prolly_id out;
	PT_CHECK_RC(prolly_merge(&out, &st, s.txn, &s.base, &s.ours, &s.theirs, NULL), 0);
	prolly_stats ts = PROLLY_STATS_INIT;
	prolly_thread_stats(&ts);
	PT_CHECK(st.applied == 1 && st.conflicts == 0);
	PT_CHECKF(ts.nodes_read <= 40, "%llu nodes read", (unsigned long long)ts.nodes_read);
	expect x;
	model_merge(&x, s.mb, &s.mo, &s.mt, PROLLY_RESOLVE_FAIL);
	prolly_id want;
	PT_CHECK_RC(tm_build(&want, s.txn, &x.out), 0);
	PT_CHECK(prolly_id_equal(&out, &want));
	expect_free(&x);
	scene_free(&s);
	edset_free(&eo);
	edset_free(&et);
	tm_model_dispose(&base);
	prolly_close(db);
}

int main(int argc, char **argv)
{
	return pt_run(argc, argv);
}
