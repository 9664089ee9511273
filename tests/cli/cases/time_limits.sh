# commit times at the end of the int64 range: a commit after a parent dated the last
# microsecond (a far-future clock, another implementation) keeps that date, never wraps to the
# first one (year -290308), whichever command makes it.
# Not run on PostgreSQL too: a commit's date is inside the commit object, bytes to the store
# (pg_commit_times writes such objects there).
p init
PROLLY_COMMIT_TIME=9223372036854775807 p put main a 1
p branch side main
p branch other main
p put side b 2
p put other d 4
p put main c 3
p merge main side
p cherry-pick main other
p revert main side
prolly log main | grep -E '^(date|message)'
p merge-base main side
