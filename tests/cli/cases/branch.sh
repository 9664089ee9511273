# branch NEW FROM (from a branch, BRANCH~N or a commit id), branches, branch -d.
#@ any-store
p init
p put main k 1
p put main k 2
p branch dev main
p branch old main~1
p branch first "$(prolly log main | grep '^commit' | tail -1 | cut -f2)"
p branches
p get dev k
p get old k
p scan first
# branches are independent
p put dev k 3
p get main k
p get dev k
# a branch shares main's tree: same root, no copying
test "$(prolly root old)" = "$(prolly root main~1)" && echo "old and main~1 share a root"
# errors
pe branch dev main
p branch 'bad..name' main
pe branch -leading main
pe branch 'a~1' main
p branch new nosuchbranch
p branch new main~9
pe branch new
# delete
p branch -d old
p branch --delete first
pe branch -d old
pe branch -d
p branches
# names with slashes and dots
p branch feature/x.y main
p put feature/x.y k 4
p get feature/x.y k
p branches
# the last branch is deleted only with --force, and the head it had can be restored
p branch -d dev
p branch -d feature/x.y
pe branch -d main
p branches
p branch -d main --force
p branches
p branch --restore main
p get main k
pe branch --restore main
pe branch --restore never
pe branch -d --restore main
