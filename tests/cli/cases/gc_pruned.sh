# Trees gc pruned (--keep: commits between a merge base and the heads are kept without their
# trees): a later gc that keeps more still runs, and no ref can be pointed at such a commit.
#@ any-store
p init
p put main a 1 >/dev/null
p branch dev main >/dev/null
for i in 1 2 3 4; do prolly put main "m$i" x >/dev/null; prolly put dev "d$i" x >/dev/null; done
prolly gc --keep 2 --reflog-days 0 | grep nodes_removed | cut -f1
prolly verify main --history | cut -f1
# gc keeping more than the last one (all, then 3): nothing to remove, no missing node
p gc
p gc --keep 3
# main~3 is kept as a commit only: a branch, tag or reset there would name a missing tree
pe branch old main~3
pe tag t1 main~3
pe reset dev main~3
p branch atbase "$(prolly merge-base main dev)" >/dev/null
pe merge atbase main~3
p merge atbase main >/dev/null
p scan atbase
p gc --keep 2
p branches | cut -f1
# reading a pruned commit says its tree is gone, never that a key is absent
prolly get main~3 a 2>&1 | sed 's/ in the [a-z]* store$//'
pe get main zz
# history reads past the commits gc kept without their trees
p history main m4
p history main m3
