# Standard streams closed by the caller (a daemon, cron, `>&- 2>&-`): the store must never take
# their numbers, or an error line, a "no change" note or a scan's output goes into a store file.
# A closed stdout is a write error (exit 5); a closed stdin reads nothing but an error.
p init
p put main k v
cksum <store/data.mdb >before.sum
# an error written with both closed: it went into data.mdb (its first meta page) before
prolly put nosuch k v >&- 2>&-
echo "put nosuch: exit $?"
prolly put main k v >&- 2>&-
echo "put, no change: exit $?"
prolly scan main >&- 2>&-
echo "scan: exit $?"
cksum <store/data.mdb | cmp -s - before.sum && echo "data.mdb unchanged"
head -c 6 store/lock.mdb | grep -q prolly && echo "lock.mdb holds a message"
pe verify main
# stdout alone closed: the write error is reported, the output lands nowhere else
prolly scan main 2>err >&-
echo "scan: exit $?: $(cat err)"
prolly put main k2 v2 2>err >&-
echo "put: exit $?: $(cat err)"
pe get main k2
# stdin closed: apply - and get-many read an error, never a store file
pe apply main - <&-
pe get-many main <&-
pe scan main
