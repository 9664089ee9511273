/*
 * conflict.c - the message of a lost compare-and-swap, as the built-in stores (LMDB, memory,
 * PostgreSQL) report it: which ref, what the write expected, what it found, how many of the
 * write's ref updates failed.
 */
#include "store_int.h"

#include <stdio.h>

int prolly__store_conflict(const char *who, const prolly_ref_update *u, size_t failing)
{
	char want[PROLLY_ID_HEX_SIZE], now[PROLLY_ID_HEX_SIZE];
	prolly_id_to_hex(want, &u->expected);
	if (u->current_exists)
		prolly_id_to_hex(now, &u->current);
	else
		snprintf(now, sizeof(now), "absent");
	if (u->expect == PROLLY_REF_EXPECT_ABSENT)
		return prolly_set_error(PROLLY_ECONFLICT,
		                        "%s: ref '%s' was expected to be absent but is %s (%zu of the "
		                        "write's ref updates failed; nothing was written)",
		                        who, u->name, now, failing);
	return prolly_set_error(PROLLY_ECONFLICT,
	                        "%s: ref '%s' was expected to be %s but is %s (%zu of the write's ref "
	                        "updates failed; nothing was written)",
	                        who, u->name, want, now, failing);
}
