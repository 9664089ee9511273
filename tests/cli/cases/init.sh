# init creates branch main with one empty commit; a second init changes nothing.
#@ any-store
pe get main k
p init
p init
p branches
p log main
p scan main
p root main
pe get main k
prolly stats main | cut -f1
prolly stats main | grep -E '^(records|height|nodes|leaves)'
# init takes no arguments
pe init extra
