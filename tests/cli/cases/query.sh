# merge-base, diff with --from/--to/--prefix/--limit, get-many.
#@ any-store
p init
printf 'put\ta1\t1\nput\ta2\t2\nput\tb1\t3\nput\tb2\t4\nput\tc\t5\nput\t\\xff\\xff\t6\nput\t\\xff\\xffz\t7\n' | p apply main -
p branch dev main
p put dev a1 changed
p del dev b1
p put dev b3 new
p put dev '\xff\xffy' x
p put main c main-side
# merge-base
p merge-base main dev
p merge-base dev main~1
p merge-base main~1 main
pe merge-base main nosuch
pe merge-base main
# no common history: main made again from scratch
p branch old main
p branch -d main
p init
pe merge-base main old
p branch -d main
p branch main old
# diff and its range options
p diff main~1 dev
p diff main~1 dev --prefix b
p diff main~1 dev --from a2 --to b3
p diff main~1 dev --prefix b --from b2
p diff main~1 dev --limit 2
p diff main~1 dev --limit 0
p diff main~1 dev --prefix '\xff\xff'
p diff main~1 dev --from z --to a
pe diff main~1 dev --limit -1
pe diff main~1 dev --prefix 'bad\q'
# get-many: answers in input order, missing keys marked \-, the empty key on an empty line
printf 'b2\nnope\na1\n\\xff\\xffz\na1\n\nc\n' | p get-many main
printf 'b2\na1\n' | p get-many dev
printf 'a1\nbad\\q\na2\n' | pe get-many main
awk 'BEGIN { for (i = 0; i < 1100; i++) print "a" i % 3 }' | prolly get-many main | sort | uniq -c
printf 'a1\r\n' | pe get-many main
: | p get-many main
pe get-many nosuch </dev/null
# a line too long for any key stops the command (exit 2) without being read whole: it used to
# be, however long (one endless line took all memory); what follows it stays unread
{
	printf 'a1\n'
	head -c 1000000 /dev/zero | tr '\0' k
	printf '\na2\n'
} >long.in
(
	prolly get-many main 2>.err
	echo "exit $?: $(cat .err)"
	left=$(wc -c)
	[ "$left" -gt 900000 ] && echo "the rest of the long line was not read"
) <long.in
{
	printf 'a2\n'
	head -c 8192 /dev/zero | tr '\0' k
	printf '\r\n'
} | pe get-many main
