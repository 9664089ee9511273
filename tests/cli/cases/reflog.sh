# reflog: every move of a branch or tag, newest first, with the operation; reset.
#@ any-store
p init
p put main a 1
p put main b 2 -m 'second'
p branch dev main
p put dev c 3
p merge main dev
p put main d 4
p put dev e 5
p merge main dev -m 'merge dev again'
p reset dev main~2
p tag v1 main
p tag -d v1
p branch -d dev
p reflog main
p reflog dev
p reflog refs/tags/v1
echo '# every ref:'
prolly reflog | cut -f2,3
# reset: to any commit, old and new printed; the reflog keeps the head it left
p reset main main~1
prolly reflog main | head -1 | cut -f3-5
p get main e
p reset main "$(prolly reflog main | head -1 | cut -f4)"
p get main e
# errors
pe reset main
pe reset nosuch main
pe reset main nosuch
pe reset 'a~1' main
pe reflog 'bad..name'
pe reflog main~1
pe reflog refs/other/x
p reflog nosuch
