# clone into a store without branches that holds a tag or remote-tracking branch the clone
# would create, at another commit (here a clone whose branches were deleted, cloned again after
# the source moved): refused for good, exit 2 naming the ref, not "run it again to finish it"
# (exit 4), which no rerun could do; the store is unchanged. At the same commits the clone
# completes.
p init
p put main k v1
p tag v1 main
prolly clone lmdb:store lmdb:copy >/dev/null
p --store lmdb:copy branch -d main --force
p put main k v2
pe clone lmdb:store lmdb:copy
p --store lmdb:copy branches
p --store lmdb:copy tags
p --store lmdb:copy log origin/main --limit 1
p reset main main~1
p clone lmdb:store lmdb:copy
p --store lmdb:copy branches
