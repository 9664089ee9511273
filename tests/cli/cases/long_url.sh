# a store URL or remote URL of over 511 bytes is printed whole: init's "initialized" line and
# remote list (each once cut to 511 bytes without a word); an argument quoted in an error line
# is cut to 511 bytes ending in " ...", so the cut shows.
d=$(printf 'd%.0s' {1..100})
long=$d/$d/$d/$d/$d/$d/s
out=$(prolly --store "lmdb:$long" init)
if [ "$out" = "initialized lmdb:$long" ]; then
	echo "init: the whole URL (${#out} bytes)"
else
	echo "init printed ${#out} bytes: $out"
fi
prolly --store "lmdb:$long" remote add far "lmdb:$long"
out=$(prolly --store "lmdb:$long" remote list)
if [ "$out" = "far	lmdb:$PWD/$long" ]; then
	echo "remote list: the whole URL"
else
	echo "remote list printed ${#out} bytes: $out"
fi
prolly --store "lmdb:$long" branch "$(printf 'b%.0s' {1..600})" main 2>.err
echo "exit $?: $(grep -o "'b*b ...'" .err | wc -c) bytes quoted"
