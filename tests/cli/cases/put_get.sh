# put, get, del: one commit each, default and -m messages, exit 1 for absent keys.
#@ any-store
p init
p put main color blue
p get main color
p put main color red
p get main color
p put main size 10 -m "set the size"
p put -m 'before the args' main shape round
p put main --message=inline weight 3
p scan main
pe get main nothing
p del main color
pe get main color
pe del main color
p del main size -m "drop size"
p scan main
prolly log main | grep '^message'
# an empty value and an empty key are ordinary values
p put main empty ''
p get main empty
p put main '' 'the empty key'
p get main ''
p scan main --limit 2
# wrong number of arguments
pe put main onlykey
pe get main k extra
pe del main
