# clone and remote add record a relative lmdb: path as the absolute path it names from the
# directory they run in (a leading ./ dropped, .. and symlinks kept as typed), so that fetch,
# push and pull find the same store from any other directory; remote add takes a path that does
# not exist yet. An absolute path and a PostgreSQL URL (remote.sh) are recorded as typed.
p init
p put main k v1
mkdir -p a/b work/w
ln -s a link
cd a
p --store lmdb:../store remote add later lmdb:./not/yet
p --store lmdb:../store remote add abs lmdb:/nonexistent/x
p --store lmdb:../store remote add here lmdb:.
cd ../link
p --store lmdb:../store remote add via lmdb:b/copy
cd ../a
pe clone lmdb:./../store lmdb:b/copy
pe clone lmdb:../store lmdb:./../store
cd ../work/w
p --store lmdb:../../a/b/copy remote list
p --store lmdb:../../a/b/copy put main k v2
p --store lmdb:../../a/b/copy push origin main
cd ../..
p put main k2 v3
cd work/w
p --store lmdb:../../a/b/copy fetch origin
p --store lmdb:../../a/b/copy pull origin main
p --store lmdb:../../a/b/copy get main k2
cd ../..
p remote list
p fetch via
