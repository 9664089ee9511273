# tag NAME [REF], tag -d NAME, tags: tags name commits and never move.
#@ any-store
p init
p put main k 1
p tag v1
p put main k 2
p tag v2 main
p tag first main~2
p tags
pe tag v1 main
p tags
p tag -d first
p tags
pe tag -d first
pe tag 'bad..name'
pe tag v3 nosuch
pe tag -d
pe tag a b c
p reflog refs/tags/v1 | cut -f2-5
# gc keeps what a tag names, like a branch head
p put main k 3
prolly gc --keep 1 --reflog-days 0 >/dev/null
prolly verify "$(prolly tags | grep '^v1' | cut -f2)" | cut -f1
p get "$(prolly tags | grep '^v1' | cut -f2)" k
