# An unchanged tree makes no commit: put of the same value, apply of nothing; --allow-empty forces one.
#@ any-store
p init
p put main k v
p put main k v
prolly log main | grep -c '^commit'
p put main k v --allow-empty -m forced
prolly log main | grep -c '^commit'
prolly log main --limit 1 | grep message
pe put main k w
