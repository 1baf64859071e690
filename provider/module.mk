# libfabric provider "cxi" (libcxisim-fi.so), the emulation daemon (cxisimd), and the C test programs that
# drive the provider through the libfabric API.

PROV_SRCS := $(wildcard provider/*.c)
PROV_OBJS := $(PROV_SRCS:%.c=$(BUILD)/obj/pic/%.o)
PROV_LIB := $(BUILD)/provider/libcxisim-fi.so

DAEMON_SRCS := $(wildcard sim/cxisimd/*.c)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/obj/%.o)
DAEMON := $(BUILD)/bin/cxisimd

PROV_PROG_SRCS := $(wildcard tests/progs/provider/prov_*.c)
PROV_PROGS := $(PROV_PROG_SRCS:tests/progs/provider/%.c=$(BUILD)/tests/provider/%)
# MPI test programs (Open MPI's mpicc from libopenmpi-dev).
MPI_PROG_SRCS := $(wildcard tests/progs/provider/mpi_*.c)
MPI_PROGS := $(MPI_PROG_SRCS:tests/progs/provider/%.c=$(BUILD)/tests/provider/%)
MPICC ?= mpicc

ALL_TARGETS += $(PROV_LIB) $(PROV_PROGS) $(MPI_PROGS)
# The daemon needs the NIC model's software layer (sim/nic/sw_*.c).
ifneq ($(wildcard sim/nic/sw_ep.c),)
ALL_TARGETS += $(DAEMON)
endif

$(BUILD)/obj/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

# The provider links only libfabric (the system one loads it) and never the engine.  -z nodelete: libfabric
# dlcloses providers in its destructor while other threads of an exiting process may still be inside ours.
$(PROV_LIB): $(PROV_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-z,defs -Wl,-z,nodelete -o $@ $^ -lfabric -lpthread -ldl

$(DAEMON): $(DAEMON_OBJS) $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lev

$(BUILD)/tests/provider/%: tests/progs/provider/%.c tests/progs/provider/common.h $(PROV_LIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iprovider -o $@ $< $(LDFLAGS) -lfabric -lpthread

$(BUILD)/tests/provider/mpi_%: tests/progs/provider/mpi_%.c
	@mkdir -p $(@D)
	$(MPICC) $(CFLAGS) -o $@ $< $(LDFLAGS)

.PHONY: provider
provider: $(PROV_LIB) $(DAEMON) $(PROV_PROGS)

# make bench: fi_pingpong latency and message rate, cxi (this provider, realtime, fabric latency 0) vs
# libfabric's tcp provider on loopback, measured in the same run.
.PHONY: bench-provider
bench-provider: $(PROV_LIB) $(DAEMON)
	CXISIM_BUILD=$(BUILD) $(PYTHON) provider/bench_pingpong.py
BENCH_TARGETS += bench-provider

# CI: several processes per simulated node (a server and three clients, then Open MPI with 4 ranks) against
# a daemon and a provider built with ASan and UBSan, whatever the main build is.
.PHONY: san-multiproc
san-multiproc: deps
	$(MAKE) SANITIZE=1 build-san/bin/cxisimd build-san/provider/libcxisim-fi.so \
		build-san/tests/provider/prov_fanin build-san/tests/provider/mpi_checks
	CXISIM_BUILD=build-san $(PYTHON) -m pytest -q tests/py/test_provider_robust.py -k several_processes
CHECK_TARGETS += san-multiproc
