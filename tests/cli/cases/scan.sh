# scan: --from (inclusive), --to (exclusive), --prefix, --limit, --reverse and combinations.
#@ any-store
p init
printf 'put\t%s\t%s\n' a 1 b 2 c 3 d 4 e 5 fa 6 fb 7 fc 8 g 9 >recs.txt
p apply main recs.txt
p scan main
p scan main --from c
p scan main --to c
p scan main --from b --to e
p scan main --from bb --to ff
p scan main --prefix f
p scan main --prefix f --reverse
p scan main --reverse
p scan main --reverse --limit 3
p scan main --reverse --from b --to e
p scan main --limit 2
p scan main --limit=1 --from=fa
p scan main --limit 0
p scan main --prefix zz
p scan main --from e --to b
p scan main --prefix f --from fb
pe scan main --limit -1
pe scan main --limit lots
pe scan main --from
pe scan main --sideways
pe scan
pe scan main extra
