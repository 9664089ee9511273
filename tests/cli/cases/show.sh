# show: a commit as log prints it, then the change it made as diff prints it.
#@ any-store
p init
p show main
p put main a 1
p put main b 2 -m 'second'
p show main
p show main~1
printf 'put\tc\t3\nput\td\t4\ndel\ta\n' > edits.txt
p apply main edits.txt -m 'three changes'
p show main
p show main --limit 2
p show main --prefix c
p show main --from b --to d
p show main --from d --to b
p show main --limit 0
p del-range main x z --allow-empty
p show main
p tag v1 main~1
p show v1
p show main@{2}
p branch side main~1
p put side e 5
p put main a 9
p merge main side -m 'merge side'
p show main
p show main -m 2
p show main --mainline 1 --prefix a
pe show main -m 3
pe show main~1 -m 2
pe show main -m 0
pe show main -m x
pe show nosuch
pe show main extra
