# stats and verify on a small and a larger tree.
#@ any-store
p init
prolly stats main | grep -E '^(records|height|nodes|leaves)'
prolly verify main | cut -f1,2,3
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "put\tkey%06d\tvalue number %d with some padding to fill nodes\n", i, i }' >big.txt
prolly apply main big.txt >/dev/null
prolly stats main | grep -E '^(records)'
h=$(prolly stats main | grep '^height' | cut -f2)
n=$(prolly stats main | grep '^nodes' | cut -f2)
l=$(prolly stats main | grep '^leaves' | cut -f2)
[ "$h" -ge 2 ] && echo "height >= 2"
[ "$n" -gt "$l" ] && [ "$l" -gt 1 ] && echo "more nodes than leaves, more than one leaf"
prolly verify main | cut -f1,2
prolly verify main~1 | cut -f1,2
prolly verify main --history | cut -f1,2
prolly scan main | wc -l
p scan main --from key001500 --limit 2
p scan main --prefix key00299 --reverse --limit 3
p get main key002999
p put main key001234 changed
p diff main~1 main
p stats nosuch
pe verify
# every branch and tag, each node read once: dev shares all but a path with main, the tag
# names main's head (its tree is listed once, under main)
p branch dev main >/dev/null
p put dev key000007 other >/dev/null
p tag t1 main >/dev/null
prolly verify --all | cut -f1,2
prolly verify --all --history | cut -f1 | sort | uniq -c
pe verify main --all
