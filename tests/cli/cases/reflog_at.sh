# BRANCH@{N} and BRANCH@{TIME}: what a branch named N moves ago or at a time, from its reflog;
# a deleted branch answers for the times it existed; the DATE reflog prints is a TIME.
#@ any-store
export PROLLY_COMMIT_TIME=1700000000000000 # 2023-11-14T22:13:20Z
p init
export PROLLY_COMMIT_TIME=1700000010000000
p put main k v1
export PROLLY_COMMIT_TIME=1700000020000000
p put main k v2
export PROLLY_COMMIT_TIME=1700000030000000
p put main k v3
p reflog main
p get 'main@{0}' k
p get 'main@{1}' k
p get 'main@{2}' k
pe get 'main@{3}' k
pe get 'main@{4}' k
p get 'main@{2023-11-14T22:13:30.000000Z}' k
p get 'main@{2023-11-14T22:13:39Z}' k
p get 'main@{2023-11-14 23:13:45+01}' k
p get 'main@{2099-01-01}' k
p get 'main@{1}~1' k
test "$(prolly root 'main@{2}')" = "$(prolly root main~2)" && echo "main@{2} and main~2 agree"
pe get 'main@{2023-11-14}' k
export PROLLY_COMMIT_TIME=1700000040000000
p branch dev main
export PROLLY_COMMIT_TIME=1700000050000000
p branch -d dev
pe get dev k
p get 'dev@{2023-11-14T22:14:05Z}' k
pe get 'dev@{2023-11-14T22:14:15Z}' k
p get 'dev@{1}' k
pe get 'main@{x}' k
pe get 'main@{1' k
pe get 'main@{2023-02-29}' k
pe get 'nope@{1}' k
# 23 days on, gc expires the entries older than 14 days: what they told is refused (exit 2)
export PROLLY_COMMIT_TIME=1702000000000000
p put main k v4
prolly gc --reflog-days 14 >/dev/null
p get 'main@{1}' k
pe get 'main@{2}' k
pe get 'main@{2023-11-14T22:13:45Z}' k
# undoing the last move: reset to what main named before it (a second later: moves at one clock
# reading that undo each other have no order to tell)
export PROLLY_COMMIT_TIME=1702000001000000
p reset main 'main@{1}'
p get main k
p get 'main@{1}' k
