/*
 * consumer.c - a program outside the project that uses an installed prolly: built by
 * tests/install.sh with the flags of the installed prolly.pc, as C and as C++. It commits one
 * record to a memory store, reads it back through the branch, and prints the library's version
 * and the value.
 */
#include <prolly.h>
#include <prolly/store.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
	prolly_db *db = NULL;
	prolly_commit *c = NULL;
	prolly_buf value = PROLLY_BUF_INIT;
	prolly_id head;
	prolly_edit e;
	int rc = 1;
	memset(&e, 0, sizeof(e));
	e.op = PROLLY_PUT;
	e.key.data = "greeting";
	e.key.size = 8;
	e.value.data = "hello";
	e.value.size = 5;
	if (prolly_open(&db, "mem:", NULL) || prolly_commit_edits(&head, db, "main", &e, 1, "hi") ||
	    prolly_resolve(&head, db, "main") || prolly_commit_read(&c, db, &head) ||
	    prolly_get(&value, db, &c->tree, "greeting", 8)) {
		fprintf(stderr, "consumer: %s\n", prolly_last_error());
		goto cleanup;
	}
	printf("prolly %s: greeting=%.*s\n", PROLLY_VERSION_STRING, (int)value.size,
	       (const char *)value.ptr);
	rc = 0;
cleanup:
	prolly_buf_dispose(&value);
	prolly_commit_free(c);
	prolly_close(db);
	return rc;
}
