# LMDB: damage that makes the reader crash inside the process (here a node whose recorded size,
# in LMDB's own node header, runs 2 GiB past the end of data.mdb: reading it is SIGBUS) is
# reported as a damaged store with exit 5, naming the signal; the tool itself does not crash.
# Under AddressSanitizer (or ThreadSanitizer) the crash must reach the CLI's parent process as a
# signal.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_abort=0:allocator_may_return_null=1"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_abort=0"
p init
p put main k v
# LMDB's leaf node: u16 size low, u16 size high, u16 flags, u16 key size (32), key (the node
# id), data. Every stored copy of the root node's entry gets the size 0x7ffffff0.
perl -e 'my ($file, $hex) = @ARGV; my $id = pack("H*", $hex);
	open(my $f, "+<", $file) or die "$!"; binmode $f; local $/; my $d = <$f>; my @at;
	while ($d =~ /\Q$id\E/g) {
		my $k = pos($d) - 32;
		push @at, $k if $k >= 8 && substr($d, $k - 2, 2) eq "\x20\x00";
	}
	substr($d, $_ - 8, 4) = pack("V", 0x7ffffff0) for @at;
	seek($f, 0, 0); print $f $d; close $f; print "patched ", scalar(@at), " node entry\n"' \
	store/data.mdb "$(prolly root main)"
pe verify main
pe get main k
pe scan main
# the commit is intact: listing branches works
p branches
pe recover
