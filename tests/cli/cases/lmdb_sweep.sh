# LMDB has no page checksums, so damage can crash a reader inside liblmdb. A sweep of single-byte
# flips over a small store (seeded: half in page headers and node offsets, half anywhere): every
# `verify` and `branches` run must exit 0 or 5, never crash. `verify main` may also exit 1 when
# the flip renamed the branch (the store as read then has no branch main, which `branches`
# confirms: names carry no checksum either).
# Under AddressSanitizer (or ThreadSanitizer) the crash must reach the parent as a signal, as in a
# normal build.
#@ slow
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_abort=0:allocator_may_return_null=1"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_abort=0"
prolly init >/dev/null
for i in $(seq 1 30); do printf 'put\tk%02d\t%0*d\n' "$i" $((i * 50)) "$i"; done >edits.txt
prolly apply main edits.txt >/dev/null
prolly branch dev main >/dev/null
prolly put dev x y >/dev/null
cp store/data.mdb orig.mdb
# 150 flips; 50 (the first 50 of the same sequence) under the sanitizers, where each of the
# 2 runs per flip costs about ten times as much (startup of the runtime, leak check at exit).
FLIPS=${FLIPS:-$([ -n "${SAN:-}" ] && echo 50 || echo 150)} SEED=${SEED:-20261203} perl -e '
	use strict; use warnings;
	my ($bin, $n, $seed) = ($ENV{PROLLY_BIN}, $ENV{FLIPS}, $ENV{SEED});
	open(my $f, "<", "orig.mdb") or die "$!"; binmode $f; local $/; my $orig = <$f>; close $f;
	my $size = length $orig; my $pages = int($size / 4096);
	my $x = $seed % 2147483648; # an LCG mod 2^31 (exact in 64-bit integers), high bits used
	sub rnd { my $m = shift; $x = ($x * 1103515245 + 12345) % 2147483648; return ($x >> 8) % $m; }
	my ($runs, $bad) = (0, 0);
	$ENV{PROLLY_COMMIT_TIME} = "1700000000000000";
	for my $i (1 .. $n) {
		my $off = $i % 2 ? (2 + rnd($pages - 2)) * 4096 + rnd(48) : rnd($size);
		my $d = $orig; substr($d, $off, 1) = chr(ord(substr($d, $off, 1)) ^ (1 + rnd(255)));
		open(my $o, ">", "store/data.mdb") or die "$!"; binmode $o; print $o $d; close $o;
		my $br = `$bin branches 2>/dev/null`; my $brc = $?;
		my $vrc = system("$bin verify main --history >/dev/null 2>&1");
		$runs += 2;
		for ([branches => $brc], [verify => $vrc]) {
			my ($cmd, $st) = @$_;
			my $ok = !($st & 127) && ($st >> 8 == 0 || $st >> 8 == 5);
			$ok ||= $cmd eq "verify" && $st >> 8 == 1 && $brc == 0 && $br !~ /^main\t/m;
			next if $ok;
			$bad++;
			printf "byte %d: %s %s\n", $off, $cmd,
			       $st & 127 ? "died of signal " . ($st & 127) : "exited " . ($st >> 8);
		}
	}
	print $runs == 2 * $n ? "2 runs per flip: " : "$runs runs for $n flips: ",
	      $bad ? "$bad bad\n" : "every run exited 0 or 5\n";
'
