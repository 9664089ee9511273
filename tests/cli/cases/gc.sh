# gc removes what no branch, tag or live reflog entry reaches; --keep N also drops history older
# than N commits; --reflog-days D expires reflog entries older than D days first.
#@ any-store
p init
p put main k 1
p put main k 2
p put main k 3
p branch tmp main
p put tmp big 'only on tmp'
p branch -d tmp
prolly gc >gc0.txt
cut -f1 gc0.txt
[ "$(grep nodes_removed gc0.txt | cut -f2)" -eq 0 ] && echo "the reflog keeps tmp's head for 14 days"
p branch --restore tmp
p get tmp big
p branch -d tmp
prolly gc --reflog-days 0 >gc1.txt
[ "$(grep nodes_removed gc1.txt | cut -f2)" -gt 0 ] && echo "gc removed tmp's nodes once its reflog expired"
grep reflog_expired gc1.txt
pe branch --restore tmp
p get main k
p get main~3 k
prolly log main | grep -c '^commit'
prolly gc >gc2.txt
[ "$(grep nodes_removed gc2.txt | cut -f2)" -eq 0 ] && echo "a second gc removes nothing"
# Entries expire by age: 15 days later, the default horizon (14 days) drops them.
p put main k 4
PROLLY_COMMIT_TIME=$((1700000000000000 + 15 * 86400 * 1000000)) prolly gc | grep reflog_expired
prolly gc --keep 2 >gc3.txt
[ "$(grep nodes_removed gc3.txt | cut -f2)" -gt 0 ] && echo "gc --keep 2 removed old commits"
prolly log main | grep -c '^commit'
p get main k
p get main~1 k
p get main~2 k
prolly verify main --history | cut -f1
pe gc --keep 0
pe gc --keep x
pe gc --keep -1
pe gc --reflog-days x
pe gc extra
