/*
 * k6.h - the tests' check of K6 (include/prolly/store.h) over a whole store: every tree node
 * stored has all its children, every commit its tree and parents, every ref an object.
 */
#ifndef TESTS_K6_H
#define TESTS_K6_H

#include "internal.h"

/* 0 when every object of db's store has what it references and every ref under refs/ names an
 * object the store has; otherwise PROLLY_ECORRUPT (message: the first object found lacking), or
 * the store's error. trees_only: commits are not checked (retention may keep a commit without
 * its tree or parents). */
int k6_holds_ex(prolly_db *db, int trees_only);

/* k6_holds_ex(db, 0). */
int k6_holds(prolly_db *db);

#endif
