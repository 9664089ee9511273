# log: one block per commit, newest first, deterministic dates, --limit, specs.
#@ any-store
p init
p put main a 1
p put main b 2 -m 'a message with a	tab and
a newline'
p log main
p log main --limit 2
p log main~1
p log main~2 --limit 5
p log main --limit 0
p branch side main~1
p put side c 3
p merge main side
p log main --limit 2
pe log main --limit x
p log nosuch
# commit times never go backwards: a commit is at least 1 microsecond after its parents
PROLLY_COMMIT_TIME=1600000000000000 p put main late 1
prolly log main --limit 2 | grep -E '^(date|message)'
PROLLY_COMMIT_TIME=1 p put side s 1
PROLLY_COMMIT_TIME=1 p merge side main -m 'back in time'
prolly log side --limit 3 | grep -E '^(date|message)'
