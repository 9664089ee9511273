# init --node-size makes a store whose trees aim at that size: the same records make another
# tree than at 4096 (about four times the leaves at 1024), the store keeps its size (init with
# another one is refused, naming both, and changes nothing), clone makes its destination with the
# source's size, and history does not move between stores of different sizes.
pe init --node-size 1000
pe init --node-size 1k
pe init --node-size
p init --node-size 1024
p init
pe init --node-size 4096
for i in $(seq 1 400); do printf 'put\tkey%04d\tvalue-%d-xxxxxxxxxxxxxxxxxxxxxxxx\n' "$i" "$i"; done >edits
p apply main edits
p stats main
p --store lmdb:four init
p --store lmdb:four apply main edits
p --store lmdb:four stats main
# the clone is a store of 1024-byte nodes: the same root, and its edits the same as the source's
p clone lmdb:store lmdb:copy
p --store lmdb:copy stats main
p --store lmdb:copy put main key0007 changed
p --store lmdb:copy push origin main
p root main
p --store lmdb:copy root main
p put main key0008 changed
p --store lmdb:copy pull origin main
p --store lmdb:copy root main
p root main
# a store of 4096-byte nodes takes no history from it, and gives it none
p --store lmdb:four remote add small lmdb:store
pe --store lmdb:four fetch small
pe --store lmdb:four push small main
p --store lmdb:four branches
