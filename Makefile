# prolly - GNU make with pkg-config.
#
#   make                  library (static + shared) and the CLI, in $(BUILD) (default build/)
#   make test             every tests/test_*.c program, then the CLI golden tests
#   make san-test         the same suite built with ASan+UBSan into build-san/
#   make tsan-test        the programs that start threads (TSAN_TESTS), built with
#                         ThreadSanitizer into build-tsan/ (docs/testing.md)
#   make bench            the harness's scale suite (bench/workloads/bench.toml) on each store of
#                         $(BENCH_STORES), results in $(BENCH_OUT)/STORE/ (docs/benchmarks.md)
#   make fuzz-smoke       libFuzzer targets fuzz/fuzz_*.c (clang, via fuzz/run.sh), a short run each
#   make install          PREFIX=/usr/local DESTDIR= ; `make uninstall` reverses it
#   make ext              the PostgreSQL extension (ext/postgres, PGXS); part of make, make test
#                         and make install wherever pg_config is found (docs/sql.md)
#   make format           clang-format -i over the sources; `make format-check` only checks
#   make check-exports    libprolly.so exports exactly the PROLLY_API functions of include/
#   make check-includes   every #include stays inside its layer (scripts/check-includes.sh)
#
# Knobs: BUILD=dir  OPT='-O0 -g'  SAN=1 (SAN=thread: TSan)  CC=clang  WERROR= (drop -Werror)  BENCH_ARGS=... (harness
#        flags, e.g. --sizes 1M)  BENCH_STORES='mem lmdb postgres'  BENCH_OUT=dir
#        PG_CONFIG=path (the server whose extension is built; EXT= leaves the extension out)
#        TEST_TIMEOUT=seconds per test program (default 600)  FUZZ_TIME=seconds per fuzz target
#        UBSAN_TRAP= (SAN=1 with libubsan and its messages; by default undefined behaviour traps)
#        TEST_CLI=0 (make test without the CLI golden tests)  CLI_ANY_PG=0|1 (the PostgreSQL runs
#        of the store-independent CLI cases; default 1, 0 under SAN: docs/testing.md)
#        NATIVE=1 (-O3 -march=native -flto, into build-native/ unless BUILD says otherwise: a
#        build to compare with the default one, docs/benchmarks.md "Comparing two builds")

CC      ?= cc
ifneq ($(NATIVE),)
  BUILD ?= build-native
  OPT   ?= -O3 -march=native -flto -ffat-lto-objects -g
  # LTO objects in the archives need the compiler's ar (its linker plugin).
  AR    := gcc-ar
  NATIVE_LDFLAGS := $(OPT)
  # -O3 inlines enough for gcc 12 to report a field as maybe uninitialised where the code
  # reads it only on a path that set it (src/edit.c's span.hi): a warning, not an error, here.
  NATIVE_CFLAGS := -Wno-error=maybe-uninitialized
endif
BUILD   ?= build
PKGS    := libcrypto libxxhash lmdb libpq
# The sanitizer builds (SAN=1, SAN=thread) compile at -O1 with line tables only (-g1: reports
# still name function, file and line, inlined frames too; a debugger sees no local variables):
# the ASan build took 106 s of CPU against 164 at -O2 -g, and the suite under it took no more.
OPT     ?= $(if $(SAN),-O1 -g1,-O2 -g)
WERROR  ?= -Werror
comma    := ,
# SAN=1: AddressSanitizer + UndefinedBehaviorSanitizer; SAN=thread: ThreadSanitizer.
# UBSAN_TRAP=1 (the default under SAN=1, not for the fuzz build): undefined behaviour executes a
# trap instruction, whose SIGILL AddressSanitizer reports with the stack (handle_sigill=1 below),
# instead of calling libubsan for a message. Without libubsan in the process LeakSanitizer's exit
# check scans 5.8 MiB less of never-written memory: a CLI command under the sanitizers took 55 ms
# of CPU against 85 ms (docs/testing.md). UBSAN_TRAP= brings the runtime and its messages back.
UBSAN_TRAP ?= $(if $(FUZZ),,1)
SANFLAGS := $(if $(filter thread,$(SAN)),-fsanitize=thread -fno-omit-frame-pointer,$(if $(SAN),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(if $(UBSAN_TRAP),-fsanitize-undefined-trap-on-error)))
FUZZFLAGS := $(if $(FUZZ),-fsanitize=fuzzer-no-link,)

# Goals that need no compiler flags from pkg-config (so they work on a bare machine).
NOBUILD_GOALS := clean distclean format format-check check-includes uninstall help
ifneq ($(filter-out $(NOBUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
  ifneq ($(shell pkg-config --exists $(PKGS) 2>/dev/null && echo yes),yes)
    $(error pkg-config cannot find all of: $(PKGS). On Debian: apt-get install pkg-config libssl-dev libxxhash-dev liblmdb-dev libpq-dev (or run: bash .ci/run))
  endif
  PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
  # The library links all but libpq, which it loads the first time a PostgreSQL store is used
  # (src/store/pq.h); the tests, benchmarks and harness call libpq themselves and link it.
  PKG_LIBS   := $(shell pkg-config --libs $(filter-out libpq,$(PKGS)))
  PQ_LIBS    := $(shell pkg-config --libs libpq)
endif

# Project flags come first; a CFLAGS/LDFLAGS given on the command line or in the environment is
# appended, so `make CFLAGS=-DFOO` keeps -std=c11, the warnings and -ffp-contract=off (the chunker
# depends on no FP contraction).
P_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra $(WERROR) -ffp-contract=off -fPIC \
            $(PKG_CFLAGS) $(SANFLAGS) $(FUZZFLAGS) $(NATIVE_CFLAGS)
P_LDFLAGS := $(SANFLAGS) $(NATIVE_LDFLAGS)
P_LDLIBS  := $(PKG_LIBS) -ldl -lpthread -lm
DEPFLAGS  := -MMD -MP

# Version and soname, read from the public header.
VERSION := $(shell sed -n 's/^\#define PROLLY_VERSION_STRING "\(.*\)".*/\1/p' include/prolly.h)
SOMAJOR := $(shell sed -n 's/^\#define PROLLY_VERSION_MAJOR \([0-9]*\).*/\1/p' include/prolly.h)
SONAME  := libprolly.so.$(SOMAJOR)

# Install layout.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL    ?= install

LIB_SRC  := $(wildcard src/*.c src/store/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC  := $(wildcard src/cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TLIB_SRC := $(wildcard tests/lib/*.c)
TLIB_OBJ := $(TLIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
# bench/lib/*.c (clock, RNG, buffer, store wrapper, TOML reader, HDR histogram, SVG charts...),
# bench/scale/*.c (the scale engine) and bench/tables/*.c (versioned tables, the relational
# suites' three contenders): the archive libbench.a, linked into every bench program and every
# test program (the tests' one RNG is bench/lib/rng.c).
# bench/harness/*.c (the runner) and bench/suites/*.c (its suites): the harness program; all
# but main.c also form libharness.a, which the tests in HLIB_TESTS link.
BLIB_SRC  := $(wildcard bench/lib/*.c bench/scale/*.c bench/tables/*.c)
BLIB_OBJ  := $(BLIB_SRC:%.c=$(BUILD)/obj/%.o)
HARN_SRC  := $(wildcard bench/harness/*.c bench/suites/*.c)
HLIB_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(filter-out bench/harness/main.c,$(HARN_SRC)))
HARN_BIN  := $(if $(HARN_SRC),$(BUILD)/bench/harness)
HLIB_TESTS := $(filter $(BUILD)/tests/test_workload $(BUILD)/tests/test_harness_%,$(TEST_BIN))

TEST_OBJ  := $(TLIB_OBJ) $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o) $(BLIB_OBJ) $(HARN_SRC:%.c=$(BUILD)/obj/%.o)
STORE_OBJ := $(filter $(BUILD)/obj/src/store/%,$(LIB_OBJ))
# Test hooks (prolly_store_pg_fail_chunk, prolly_store_pg_statement, prolly_store_mem_table) exist only in a test build: the files that hold them
# are compiled a second time with -DPROLLY_TEST_HOOKS into $(BUILD)/obj/hooks/, and the tests
# link $(TEST_LIB), libprolly.a with those objects swapped in. libprolly.a and libprolly.so
# never contain a hook.
HOOK_SRC  := src/store/pg.c src/store/pg_write.c src/store/mem.c src/store/pq.c
HOOK_OBJ  := $(HOOK_SRC:%.c=$(BUILD)/obj/hooks/%.o)
TEST_LIB  := $(BUILD)/libprolly_test.a
ALL_OBJ   := $(LIB_OBJ) $(CLI_OBJ) $(TEST_OBJ) $(BENCH_OBJ) $(HOOK_OBJ)

# Include paths state the layers: each object sees only the headers its layer may use, so an
# include that crosses a layer fails to compile (scripts/check-includes.sh catches the relative
# paths that -I cannot stop). The library alone sees src/, and is built with hidden visibility:
# libprolly.so exports only what include/ marks PROLLY_API (scripts/check-exports.sh).
# Its tests see src/ too (they link libprolly.a, where hidden symbols stay linkable); the CLI
# sees only the public header; bench/lib/, the scale engine and the bench programs see the
# public header and bench/lib/; the harness's runner and suites also bench/harness/ and
# bench/tables/ (whose own files see the public header and bench/lib/).
# The stores see only the public headers and their own folder (src/store/store_int.h): never the
# engine's internals.
$(LIB_OBJ):   LAYER_CFLAGS := -Iinclude -Isrc -fvisibility=hidden
$(STORE_OBJ): LAYER_CFLAGS := -Iinclude -fvisibility=hidden
$(HOOK_OBJ):  LAYER_CFLAGS := -Iinclude -fvisibility=hidden -DPROLLY_TEST_HOOKS
$(CLI_OBJ):   LAYER_CFLAGS := -Iinclude
$(BENCH_OBJ): LAYER_CFLAGS := -Iinclude -Ibench/lib
$(HARN_SRC:%.c=$(BUILD)/obj/%.o): LAYER_CFLAGS := -Iinclude -Ibench/lib -Ibench/harness -Ibench/tables
$(TEST_OBJ):  LAYER_CFLAGS := -Iinclude -Isrc -Ibench/lib -Ibench/harness -Ibench/tables -DPROLLY_TEST_HOOKS
# The harness records the optimisation flags it was built with (dependencies.txt).
$(BUILD)/obj/bench/harness/env.o: LAYER_CFLAGS += -DHARNESS_OPT='"$(OPT)"'

FORMAT_SRC := $(wildcard include/*.h include/*/*.h src/*.[ch] src/store/*.[ch] src/cli/*.[ch] \
                         tests/*.[ch] tests/lib/*.[ch] tests/install/*.[ch] tests/pgbouncer/*.[ch] \
                         fuzz/*.[ch] \
                         bench/*.[ch] bench/lib/*.[ch] bench/scale/*.[ch] bench/tables/*.[ch] \
                         bench/harness/*.[ch] bench/suites/*.[ch] \
                         ext/postgres/*.[ch])
CLANG_FORMAT ?= clang-format

# Sanitizer run-time options (the environment may override each one). LeakSanitizer is on; when
# it cannot run (it refuses to work under ptrace: strace, gdb), tests/run.sh retries without it
# and says so.
ASAN_OPTIONS  ?= detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:print_summary=1:handle_sigill=1
UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1:print_summary=1
TSAN_OPTIONS  ?= second_deadlock_stack=1:print_summary=1
LSAN_OPTIONS  ?= $(if $(wildcard tests/lsan.supp),suppressions=$(CURDIR)/tests/lsan.supp:,)print_suppressions=0
TEST_TIMEOUT  ?= 600
TEST_CLI      ?= 1
CLI_ANY_PG    ?= $(if $(SAN),0,1)
FUZZ_TIME     ?= 10
BENCH_ARGS    ?=
BENCH_STORES  ?= mem lmdb postgres
BENCH_CONFIG  ?= bench/workloads/bench.toml
BENCH_OUT     ?= bench-out/$(shell date -u +%Y%m%dT%H%M%SZ)

# The PostgreSQL extension (ext/postgres) is built with PGXS wherever pg_config and the server's
# headers are found (Debian: postgresql-server-dev-15), but not into a sanitizer or fuzzing
# build: a backend cannot load a module built with ASan; nor into a NATIVE=1 build, because
# PGXS builds it inside ext/postgres/, which every build directory shares. Its test (ext/postgres/test_extension.sh)
# installs it, so `make test` then needs root, as CI has.
PG_CONFIG ?= pg_config
ifeq ($(origin EXT),undefined)
  EXT := $(if $(SAN)$(FUZZ)$(NATIVE),,$(shell test -f "$$($(PG_CONFIG) --pgxs 2>/dev/null)" && test -f "$$($(PG_CONFIG) --includedir-server 2>/dev/null)/postgres.h" && echo ext/postgres))
endif
EXT_MAKE = $(MAKE) -C ext/postgres BUILD=$(BUILD) PG_CONFIG=$(PG_CONFIG)

.PHONY: all lib cli tests test san-test tsan-test bench bench-bin fuzz fuzz-smoke install uninstall \
        format format-check check-exports check-includes clean distclean help ext
.DELETE_ON_ERROR:
# Keep the object files of chained rules (tests, benches, fuzzers) instead of deleting them.
.SECONDARY:

all: $(BUILD)/libprolly.a $(BUILD)/libprolly.so $(BUILD)/prolly $(if $(EXT),ext)
lib: $(BUILD)/libprolly.a $(BUILD)/libprolly.so
cli: $(BUILD)/prolly
tests: $(TEST_BIN)

$(BUILD)/obj/hooks/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LAYER_CFLAGS) $(P_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

ext: $(BUILD)/libprolly.a $(BUILD)/prolly
	$(EXT_MAKE)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LAYER_CFLAGS) $(P_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/libprolly.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(TEST_LIB): $(filter-out $(HOOK_SRC:%.c=$(BUILD)/obj/%.o),$(LIB_OBJ)) $(HOOK_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/libprolly.so: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined -o $@ $^ $(P_LDFLAGS) $(LDFLAGS) $(P_LDLIBS) $(LDLIBS)

$(BUILD)/prolly: $(CLI_OBJ) $(BUILD)/libprolly.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libprolly.a $(P_LDFLAGS) $(LDFLAGS) $(P_LDLIBS) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TLIB_OBJ) $(BUILD)/libbench.a $(TEST_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TLIB_OBJ) $(BUILD)/libbench.a $(TEST_LIB) $(P_LDFLAGS) $(LDFLAGS) $(PQ_LIBS) $(P_LDLIBS) $(LDLIBS)

$(BUILD)/libbench.a: $(BLIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/libharness.a: $(HLIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# The harness program (bench/harness/*.c).
$(BUILD)/bench/harness: $(BUILD)/obj/bench/harness/main.o $(BUILD)/libharness.a $(BUILD)/libbench.a $(BUILD)/libprolly.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(BUILD)/libharness.a $(BUILD)/libbench.a $(BUILD)/libprolly.a $(P_LDFLAGS) $(LDFLAGS) $(PQ_LIBS) $(P_LDLIBS) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libbench.a $(BUILD)/libprolly.a
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(BUILD)/libbench.a $(BUILD)/libprolly.a $(P_LDFLAGS) $(LDFLAGS) $(PQ_LIBS) $(P_LDLIBS) $(LDLIBS)

$(HLIB_TESTS): $(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(BUILD)/libharness.a $(BUILD)/libbench.a $(TLIB_OBJ) $(TEST_LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< $(TLIB_OBJ) $(BUILD)/libharness.a $(BUILD)/libbench.a $(TEST_LIB) $(P_LDFLAGS) $(LDFLAGS) $(PQ_LIBS) $(P_LDLIBS) $(LDLIBS)

# ---- tests ------------------------------------------------------------------------------------

# Started first, after the CLI golden tests, longest first (tests/run.sh): the jobs that took 20 s
# or more in CI's sanitizer step or its make test, so that no slot idles while one ends alone.
TEST_FIRST := test_extension.sh test_harness_tpcb test_harness_sysbench test_diff test_pg_conn \
              test_lmdb_safety test_sync_cost test_model test_pg_schema test_range_delete \
              pgbouncer.sh test_harness_scale test_harness_insert

# The programs that start a PostgreSQL server of their own rather than take a database on the
# run's (tests/run.sh): they restart it or crash it (test_pg, test_pg_conn, test_pg_life) or
# make a hot standby of it (test_pg_standby).
TEST_OWN_PG := test_pg test_pg_conn test_pg_life test_pg_standby

test: all $(TEST_BIN)
	@BUILD=$(BUILD) PROLLY_CLI=$(CURDIR)/$(BUILD)/prolly TEST_TIMEOUT=$(TEST_TIMEOUT) SAN=$(SAN) \
	 TEST_FIRST='$(TEST_FIRST)' TEST_OWN_PG='$(TEST_OWN_PG)' \
	 ASAN_OPTIONS='$(ASAN_OPTIONS)' UBSAN_OPTIONS='$(UBSAN_OPTIONS)' LSAN_OPTIONS='$(LSAN_OPTIONS)' \
	 TSAN_OPTIONS='$(TSAN_OPTIONS)' TEST_CLI=$(TEST_CLI) PROLLY_CLI_ANY_PG=$(CLI_ANY_PG) bash tests/run.sh $(TEST_BIN) $(if $(SAN),,tests/install.sh) tests/pgbouncer.sh tests/stress.sh $(if $(EXT),ext/postgres/test_extension.sh)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its own build tree.
san-test:
	$(MAKE) SAN=1 BUILD=build-san test

# The programs that start threads of their own or make the library start its (commit flushes,
# read-ahead, the edit's encode thread), under ThreadSanitizer in their own build tree; not the
# CLI golden tests, nor test_store (threads too, but minutes under TSan).
TSAN_TESTS := test_threads test_engine test_commit_race test_commit_on test_gc test_reflog \
              test_lmdb_safety test_lmdb_pressure test_abi test_sync test_sync_fail \
              test_sync_race test_sync_remote test_hdr test_pg_conn test_pg_standby \
              test_pg_reads test_pg_life test_bench_tables test_harness_lib
# One program more than CPUs at once, as tests/run.sh runs every suite: these wait on their
# servers, timeouts and children (CI's busy share of the CPUs was about 80% in this step with one
# per CPU).
tsan-test:
	$(MAKE) SAN=thread BUILD=build-tsan TEST_CLI=0 \
	        TEST_BIN='$(TSAN_TESTS:%=build-tsan/tests/%)' test

# ---- benchmarks -------------------------------------------------------------------------------

bench-bin: all $(BENCH_BIN) $(HARN_BIN)

# One harness run per store (the postgres one on a throwaway cluster unless $$PROLLY_PG_URL is
# set), each into its own result directory; every store runs even if an earlier one failed.
bench: bench-bin
	@rc=0; for s in $(BENCH_STORES); do \
		echo "scripts/run_postgres_scale_benchmark.sh --config $(BENCH_CONFIG) --suite scale --store $$s --output $(BENCH_OUT)/$$s $(BENCH_ARGS)"; \
		BUILD=$(BUILD) bash scripts/run_postgres_scale_benchmark.sh --config $(BENCH_CONFIG) \
			--suite scale --store $$s --output $(BENCH_OUT)/$$s $(BENCH_ARGS) || rc=1; \
	done; exit $$rc

# ---- fuzzing (clang + libFuzzer) --------------------------------------------------------------
# `make fuzz` builds the library with clang, sanitizers and coverage (FUZZ=1) into build-fuzz/;
# fuzz/run.sh builds the targets fuzz/fuzz_*.c against it and runs each for FUZZ_TIME seconds.

fuzz:
	$(MAKE) CC=clang SAN=1 FUZZ=1 WERROR= BUILD=build-fuzz build-fuzz/libprolly.a

fuzz-smoke:
	@if [ -f fuzz/run.sh ]; then bash fuzz/run.sh $(FUZZ_TIME); else echo "fuzz-smoke: no fuzz/run.sh"; fi

# ---- install ----------------------------------------------------------------------------------

install: all
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BINDIR)
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/prolly
	$(INSTALL) -m 644 include/prolly.h $(DESTDIR)$(INCLUDEDIR)/prolly.h
	$(INSTALL) -m 644 include/prolly/store.h $(DESTDIR)$(INCLUDEDIR)/prolly/store.h
	$(INSTALL) -m 644 include/prolly/pg_sql.h $(DESTDIR)$(INCLUDEDIR)/prolly/pg_sql.h
	$(INSTALL) -m 644 $(BUILD)/libprolly.a $(DESTDIR)$(LIBDIR)/libprolly.a
	$(INSTALL) -m 755 $(BUILD)/libprolly.so $(DESTDIR)$(LIBDIR)/libprolly.so.$(VERSION)
	ln -sf libprolly.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libprolly.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    prolly.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/prolly.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/prolly.pc
	$(INSTALL) -m 755 $(BUILD)/prolly $(DESTDIR)$(BINDIR)/prolly
	@if [ -f docs/prolly.1 ]; then \
		echo "$(INSTALL) -m 644 docs/prolly.1 $(DESTDIR)$(MANDIR)/man1/prolly.1"; \
		$(INSTALL) -d $(DESTDIR)$(MANDIR)/man1 && \
		$(INSTALL) -m 644 docs/prolly.1 $(DESTDIR)$(MANDIR)/man1/prolly.1; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	$(if $(EXT),$(EXT_MAKE) install DESTDIR=$(DESTDIR))

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/prolly.h $(DESTDIR)$(INCLUDEDIR)/prolly/store.h \
	      $(DESTDIR)$(INCLUDEDIR)/prolly/pg_sql.h
	-rmdir $(DESTDIR)$(INCLUDEDIR)/prolly 2>/dev/null
	rm -f $(DESTDIR)$(LIBDIR)/libprolly.a $(DESTDIR)$(LIBDIR)/libprolly.so \
	      $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libprolly.so.$(VERSION)
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/prolly.pc
	rm -f $(DESTDIR)$(BINDIR)/prolly
	rm -f $(DESTDIR)$(MANDIR)/man1/prolly.1
	$(if $(EXT),$(EXT_MAKE) uninstall DESTDIR=$(DESTDIR))

# ---- formatting -------------------------------------------------------------------------------

format:
	$(CLANG_FORMAT) -i $(FORMAT_SRC)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SRC)

# ---- layer checks (CI runs both) ---------------------------------------------------------------

check-exports: $(BUILD)/libprolly.so
	@bash scripts/check-exports.sh $(BUILD)/libprolly.so

check-includes:
	@bash scripts/check-includes.sh

# ---- misc -------------------------------------------------------------------------------------

clean:
	rm -rf $(BUILD) build-san build-tsan build-fuzz build-native
	rm -rf ext/postgres/*.o ext/postgres/*.so ext/postgres/results ext/postgres/regression.* \
	       ext/postgres/log

distclean: clean
	rm -rf build .prolly bench-out

help:
	@sed -n '2,/^$$/s/^# \{0,1\}//p' Makefile

-include $(ALL_OBJ:.o=.d)
