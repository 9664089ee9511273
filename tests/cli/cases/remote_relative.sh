# A remote recorded with a relative lmdb: path, as prolly did before remote add made such a path
# absolute (written here by SQL as it was stored: the ref config/remotes/NAME naming a tree whose
# key "url" holds the URL), named a store from the directory remote add ran in, which nothing
# recorded. fetch, push and pull refuse it from every directory, naming the path and the way
# out, rather than open whatever that path names from where they run. remote list shows it.
#@ pg-only
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PROLLY_STORE" -c "$1"; }
p init
p put main k v
p --store lmdb:other init
mkdir -p sub/other
p --store lmdb:sub/other init
p branch cfg main
p del cfg k
p put cfg url lmdb:other
sql "INSERT INTO refs VALUES (convert_to('config/remotes/old', 'UTF8'),
	decode('$(prolly root cfg)', 'hex'))"
p branch -d cfg
# (and one of lmdb: alone, no path at all: not a relative path, and said so)
p branch cfg main
p del cfg k
p put cfg url lmdb:
sql "INSERT INTO refs VALUES (convert_to('config/remotes/nopath', 'UTF8'),
	decode('$(prolly root cfg)', 'hex'))"
p branch -d cfg
p remote list
pe fetch nopath
pe fetch old
cd sub
pe fetch old
pe push old main
pe pull old main
# (each directory has its own other: what the path named from here)
p --store lmdb:other branches
# the way out the message gives: record it again, whole
cd ..
p remote remove old
p remote add old lmdb:other
cd sub
p branch dev main
p push old dev
p fetch old
p --store lmdb:../other branches
