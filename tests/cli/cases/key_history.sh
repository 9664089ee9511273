# history BRANCH KEY: the commits that changed KEY, newest first, with its value after each.
#@ any-store
p init
p put main a 1
p put main b 1
p put main a 2
p branch dev main
p put dev a 3
p put main c 1
# main sets a differently; the merge takes dev's value, which hides main's change
p put main a 9
p merge main dev --resolve theirs
p put main a 3
p del main a
p put main 'a\tb' 'x\ny'
p history main a
p history main a --limit 2
p history main~1 a
p history dev a
p history main 'a\tb'
# a key never set prints nothing
p history main nothing
# errors
pe history main
pe history nosuch a
pe history main 'bad\q'
pe history main a --limit x
