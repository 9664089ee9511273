# names far over the limits (100,000 bytes): refused with exit 2, the message quoting at most
# 511 bytes of the name, never the whole of it.
# Not run on PostgreSQL too: the names are refused before any store is written.
p init
long=$(head -c 100000 /dev/zero | tr '\0' x)
for cmd in "branch $long main" "tag $long main" "remote add $long lmdb:elsewhere" "put $long k v"; do
	prolly $cmd 2>.err
	echo "prolly ${cmd%% *} (name of ${#long} bytes): exit $?, a message of $(wc -l <.err) line and $(wc -c <.err) bytes"
done
p branches
