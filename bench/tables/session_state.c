/*
 * session_state.c - the lowest file of bench/tables: what every contender does to a session's
 * own state (tables_int.h). bt__fail and bt__fail_prolly set the session's error, bt__clear_last
 * drops its last result. It calls no other file of the folder; session.c, txn.c and the
 * contenders (plain.c, plain_write.c, client.c, sql.c) call it.
 */
#include "tables_int.h"

#include <stdio.h>

int bt__fail(bt_session *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return -1;
}

int bt__fail_prolly(bt_session *s, const char *what)
{
	return bt__fail(s, "%s: %s", what, prolly_last_error());
}

void bt__clear_last(bt_session *s)
{
	PQclear(s->last);
	s->last = NULL;
}
