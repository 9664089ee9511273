# gc removes what no branch reaches; --keep N also drops history older than N commits.
#@ any-store
p init
p put main k 1
p put main k 2
p put main k 3
p branch tmp main
p put tmp big 'only on tmp'
p branch -d tmp
prolly gc >gc1.txt
cut -f1 gc1.txt
[ "$(grep nodes_removed gc1.txt | cut -f2)" -gt 0 ] && echo "gc removed tmp's nodes"
p get main k
p get main~3 k
prolly log main | grep -c '^commit'
prolly gc >gc2.txt
[ "$(grep nodes_removed gc2.txt | cut -f2)" -eq 0 ] && echo "a second gc removes nothing"
prolly gc --keep 2 >gc3.txt
[ "$(grep nodes_removed gc3.txt | cut -f2)" -gt 0 ] && echo "gc --keep 2 removed old commits"
prolly log main | grep -c '^commit'
p get main k
p get main~1 k
p get main~2 k
prolly verify main --history | cut -f1
pe gc --keep 0
pe gc --keep x
pe gc extra
