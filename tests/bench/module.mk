# Engine benchmarks: the hold model in our engine (10^4 and 10^6 pending) and in SimGrid 3.32.
BENCH_HOLD := $(BUILD)/bench/bench_hold
SIMGRID_HOLD := $(BUILD)/bench/simgrid_hold
ALL_TARGETS += $(BENCH_HOLD) $(SIMGRID_HOLD)
BENCH_TARGETS += bench-engine

$(BENCH_HOLD): $(BUILD)/obj/tests/bench/bench_hold.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SIMGRID_HOLD): $(BUILD)/obj/tests/bench/simgrid_hold.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lsimgrid

.PHONY: bench-engine
bench-engine: $(BENCH_HOLD) $(SIMGRID_HOLD)
	@BENCH_HOLD=$(BENCH_HOLD) SIMGRID_HOLD=$(SIMGRID_HOLD) tests/bench/engine.sh
