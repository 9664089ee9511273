# BRANCH~N and commit ids are accepted wherever a branch is read; writes need a branch name.
#@ any-store
p init
p put main k v1
p put main k v2
p put main k v3
p get main k
p get main~0 k
p get main~1 k
p get main~2 k
pe get main~3 k
p get main~4 k
p get main~99 k
c=$(prolly log main | grep '^commit' | sed -n 2p | cut -f2)
p get "$c" k
p root main~1
test "$(prolly root main~1)" = "$(prolly root "$c")" && echo "main~1 and its commit id agree"
p scan main~2
p diff main~2 main
p get 0000000000000000000000000000000000000000000000000000000000000000 k
pe put main~1 k v
pe del main~1 k
pe put "$c" k v
p get 'main~' k
p get 'main~x' k
