# Revision specs: short commit ids, REF^ and REF^N combined with ~N, tree ids, hex branch names.
#@ any-store
p init
# Two commits whose ids share their first 4 hex digits (8eb1), found by trying messages.
p branch b1 main
p branch b2 main
PROLLY_COMMIT_TIME=1800000000000000 p put b1 k v -m m178
PROLLY_COMMIT_TIME=1800000000000000 p put b2 k v -m m374
pe get 8eb1 k
pe get 8EB1 k
id=$(prolly branches | grep '^b1' | cut -f2)
p get "${id:0:10}" k
p get "$(echo "${id:0:10}" | tr a-f A-F)" k
p log "${id:0:10}" --limit 1
pe get abc k
pe get 0000000 k
# ^ and ^N, with ~N
p put main a 1
p branch side main
p put side s 1
p put main a 2
p merge main side -m merged
p put main a 3
p log main^ --limit 1
p log main~1^2 --limit 1
p log main^^2 --limit 1
p log main~1^2~1 --limit 1
p get main~1^1 a
p get main^0 a
pe get main^3 k
pe get main~1^3 k
pe get main^x k
pe get main~ k
# a tree id where a commit is expected is bad input (exit 2), not a store error
tree=$(prolly root main)
pe get "$tree" a
pe branch t "$tree"
# branch names of 64 hex digits are refused; shorter all-hex names win over a short id
pe branch "$id" main
p branch 8eb1 main
p get 8eb1 a
