# clone refuses a destination that is its source under another spelling: a trailing slash, ./,
# /., an absolute path or a symlink to the directory all name one LMDB environment (compared by
# device and inode), which is refused before anything is opened or created. A remote that is the
# store itself is harmless: fetch, push and pull of it copy nothing and move nothing.
p init
p put main k v
ln -s store link
pe clone lmdb:store lmdb:store/
pe clone lmdb:store lmdb:./store
pe clone lmdb:store lmdb:store/.
pe clone lmdb:store "lmdb:$PWD/store//"
pe clone lmdb:./store lmdb:link
pe clone lmdb:link lmdb:store
p branches
p remote list
# another directory is another store, also under a name that starts like the source's
p clone lmdb:store lmdb:store2
p remote add self lmdb:link
p fetch self
p push self main
p pull self main
p branches
