# del-range: every key in [FROM, TO) in one commit; delr lines in apply; no change, no commit.
#@ any-store
p init
printf 'put\ta\t1\nput\tb\t2\nput\tb\\x00\t3\nput\tc\t4\nput\td\t5\nput\te\t6\n' | p apply main -
p del-range main b d
p scan main
prolly log main --limit 1 | grep message
# FROM "" starts at the first key; TO is exclusive
p del-range main '' d -m "cut the front"
p scan main
prolly log main --limit 1 | grep message
# an empty range changes nothing: no commit, the head printed, "no change" on stderr
p del-range main x z
p del-range main d d
p del-range main x z --allow-empty
prolly log main --limit 1 | grep message
# errors
pe del-range main z a
pe del-range main 'a\q' b
pe del-range nosuch a b
pe del-range main~1 a b
pe del-range main a
# apply: delr lines take effect in order (a put after the delr survives)
printf 'put\tk1\t1\nput\tk2\t2\nput\tk3\t3\ndelr\tk\tk3\nput\tk1\tback\n' | p apply main -
p scan main
printf 'delr\tb\ta\n' | pe apply main -
printf 'delr\ta\n' | pe apply main -
# a large range over many leaves
awk 'BEGIN { for (i = 1; i <= 20000; i++) printf "put\tkey%06d\tvalue\n", i }' | p apply main - -m bulk
p del-range main key000100 key019900
prolly stats main | grep records
p get main key000099
pe get main key000100
p get main key019900
