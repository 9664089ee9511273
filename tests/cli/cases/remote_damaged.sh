# A remote whose record is damaged (its URL's bytes no longer hash to the record's id) still
# owns its name: a branch NAME/x would hide its remote-tracking branches, so it is refused.
p init
p remote add origin lmdb:origin-URLMARK
p remote add other lmdb:other
perl -0777 -pi -e 's/origin-URLMARK/origin-URLMARX/g' store/data.mdb
pe remote list
pe branch origin/x main
pe branch other/x main
p branch third/x main
p branches
p remote remove origin
pe branch origin/x main
