# cxisim build.  `make` builds everything; `make test` builds and runs every C and Python test; `make bench`
# prints the benchmark figures; `make demo` runs the main job.  Each of these entry targets first installs the
# missing Debian packages (`deps`), then builds in a sub-make, so that even with -j nothing compiles before the
# packages are there (tests/py/test_make_targets.py checks every entry target the README documents).
# SANITIZE=1 builds with ASan and UBSan into build-san/ (tests then use those binaries).
#
# Sources are discovered, not listed: every .c under sim/ is part of the engine (files named *_main.c are
# program entry points).  Areas with extra programs or link needs add rules in their own module.mk.

SHELL := /bin/bash
PYTHON := /usr/bin/python3
CC ?= gcc

ifeq ($(SANITIZE),1)
BUILD := build-san
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD := build
SAN :=
endif

CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wno-format-truncation -MMD -MP $(SAN) $(EXTRA_CFLAGS)
LDFLAGS := $(SAN) $(EXTRA_LDFLAGS)
LDLIBS := -ljson-c -lm

SIM_SRCS := $(wildcard sim/*.c sim/nic/*.c sim/fabric/*.c sim/switch/*.c sim/workload/*.c)
SIM_LIB_SRCS := $(filter-out %_main.c,$(SIM_SRCS))
SIM_OBJS := $(SIM_LIB_SRCS:%.c=$(BUILD)/obj/%.o)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

ENGINE := $(BUILD)/bin/cxisim-engine

# Areas append to these in their module.mk.
ALL_TARGETS := $(ENGINE) $(UNIT_BINS)
BENCH_TARGETS :=
CHECK_TARGETS :=

DEB_PKGS := gcc make pkg-config libfabric-dev libfabric-bin libev-dev libjson-c-dev libsimgrid-dev \
	python3 python3-pytest python3-jinja2 python3-yaml python3-matplotlib \
	openmpi-bin libopenmpi-dev python3-mpi4py libcriterion-dev netpipe-openmpi slurm-wlm munge

.PHONY: all deps build-all test unit pytest bench bench-run demo clean

all: deps
	@$(MAKE) --no-print-directory build-all

-include $(sort $(wildcard */module.mk */*/module.mk))

build-all: $(ALL_TARGETS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(ENGINE): $(BUILD)/obj/sim/engine_main.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each unit test links the whole engine (object files, so models' constructor registration is kept).
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcriterion

# Installs only what is missing; silent when everything is present.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

unit: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t --jobs 1 --short-filename; done

pytest: build-all
	CXISIM_BUILD=$(BUILD) $(PYTHON) -m pytest -q tests/py

test: deps
	$(MAKE) build-all
	$(MAKE) unit
	$(MAKE) pytest $(CHECK_TARGETS)

bench: deps
	@$(MAKE) --no-print-directory bench-run

bench-run: build-all $(BENCH_TARGETS)

demo: deps
	@$(MAKE) --no-print-directory build-all
	./cxisim demo

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
.SECONDARY:
