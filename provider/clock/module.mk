# libcxisim-clock.so: the clock interposer `cxisim exec` preloads (virtual time for unmodified programs), and
# the test programs that drive it with a virtual-time owner of their own (tests/progs/clock/).

CLOCK_SRCS := $(wildcard provider/clock/*.c)
CLOCK_OBJS := $(CLOCK_SRCS:%.c=$(BUILD)/obj/pic/%.o)
CLOCK_LIB := $(BUILD)/provider/libcxisim-clock.so

CLOCK_OWNER_LIB := $(BUILD)/tests/clock/libclock_owner.so
CLOCK_PROGS := $(BUILD)/tests/clock/clock_check $(BUILD)/tests/clock/clock_work $(BUILD)/tests/clock/clock_timers \
	$(BUILD)/tests/clock/clock_syscalls

# libc declares some arguments nonnull; the wrappers still check them, since callers break that promise.  So
# the declarations lose that attribute here: with it, the compiler deleted the checks (gettimeofday(NULL, tz),
# legal on Linux, crashed the wrapper: its `tv &&` was gone, -fno-delete-null-pointer-checks or not).
# Never sanitized: `cxisim exec` preloads it into programs that do not load the ASan runtime first (a
# sanitized preload would abort them: "ASan runtime does not come first").
# The flags are set here, so the objects depend on this file: an object built before a flag changed is rebuilt
# (one built before the nonnull flag kept crashing test_null_arguments_get_the_real_result after a pull).
$(CLOCK_OBJS): provider/clock/module.mk
$(CLOCK_OBJS): CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) \
	'-D__attribute_nonnull__(params)='

ALL_TARGETS += $(CLOCK_LIB) $(CLOCK_OWNER_LIB) $(CLOCK_PROGS)

$(CLOCK_LIB): $(CLOCK_OBJS)
	@mkdir -p $(@D)
	$(CC) $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(LDFLAGS)) -shared -Wl,-z,defs -o $@ $^ -ldl -lpthread

$(CLOCK_OWNER_LIB): tests/progs/clock/clock_owner.c tests/progs/clock/clock_owner.h provider/cxisim_clock.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -Iprovider -o $@ $< $(LDFLAGS) -ldl -lpthread

$(BUILD)/tests/clock/clock_check: tests/progs/clock/clock_check.c tests/progs/clock/clock_owner.h $(CLOCK_OWNER_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iprovider -o $@ $< $(LDFLAGS) -L$(@D) -lclock_owner -Wl,-rpath,'$$ORIGIN' -lpthread

$(BUILD)/tests/clock/clock_work: tests/progs/clock/clock_work.c tests/progs/provider/common.h $(PROV_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iprovider -o $@ $< $(LDFLAGS) -lfabric -lpthread

# The three-mode test programs (clock_test.h).
$(BUILD)/tests/clock/clock_timers $(BUILD)/tests/clock/clock_syscalls: $(BUILD)/tests/clock/%: tests/progs/clock/%.c \
		tests/progs/clock/clock_test.h tests/progs/clock/clock_owner.h tests/progs/provider/common.h \
		$(CLOCK_OWNER_LIB) $(PROV_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iprovider -o $@ $< $(LDFLAGS) -L$(@D) -lclock_owner -Wl,-rpath,'$$ORIGIN' -lfabric -lpthread

# make bench: fi_pingpong's wall time per simulated round trip in virtual time next to realtime's (idle and
# with CPU hogs), and an 8-rank Open MPI Allreduce loop's slowdown (wall / simulated time).
.PHONY: bench-virtual
bench-virtual: $(PROV_LIB) $(DAEMON) $(CLOCK_LIB) $(MPI_PROGS)
	CXISIM_BUILD=$(BUILD) $(PYTHON) provider/clock/bench_virtual.py
BENCH_TARGETS += bench-virtual
