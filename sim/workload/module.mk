# Workloads: the SimGrid peer of the RPC storm, and the workload benchmarks of `make bench`:
#   bench-fig5   the full seed 000 Fig 5 sweep (both strategies, 104 to 53,248 clients), wall time and the
#                seed's validation targets at full scale
#   bench-storm  RPC storm (10,000 clients x 8 in flight, 64-B RPCs, one server, 10,240-endpoint dragonfly)
#                in cxisim and in SimGrid 3.32, RPCs per wall second and their ratio
#   bench-seed   Fig 4 and Fig 10 at full scale (validation targets)
#   bench-scale  Fig 4 at 6,656 / 26,624 / 106,496 clients and aurora-full on 1 / 4 / 16 groups (100 us), one run
#                at a time (the slope); Fig 4 at 1,104,896 clients (both strategies) and the whole of Aurora
#                (aurora-full, 1 ms, both strategies), each interleaved with the same scenario at 6,656 clients
#                (tests/bench/speed_ratio.py): the median ratio of events per CPU-s with its 95% interval,
#                CPU s, peak RSS, bytes per client process
SIMGRID_RPC_STORM := $(BUILD)/bench/simgrid_rpc_storm
ALL_TARGETS += $(SIMGRID_RPC_STORM)
BENCH_TARGETS += bench-fig5 bench-storm bench-seed bench-scale

$(SIMGRID_RPC_STORM): $(BUILD)/obj/tests/bench/simgrid_rpc_storm.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lsimgrid

.PHONY: bench-fig5 bench-storm bench-seed bench-scale
bench-fig5: build-all
	@CXISIM_BUILD=$(BUILD) $(PYTHON) tests/bench/bench_workloads.py fig5
bench-storm: build-all
	@CXISIM_BUILD=$(BUILD) SIMGRID_RPC_STORM=$(SIMGRID_RPC_STORM) $(PYTHON) tests/bench/bench_workloads.py storm
bench-seed: build-all
	@CXISIM_BUILD=$(BUILD) $(PYTHON) tests/bench/bench_workloads.py seed
# bench-scale is an entry target the README names (a newcomer may run it alone, ~45 min): like `make bench`,
# the Debian packages first, then the build in a sub-make.
bench-scale: deps
	@$(MAKE) --no-print-directory build-all
	@CXISIM_BUILD=$(BUILD) $(PYTHON) tests/bench/bench_workloads.py scale

# bench-replay: a real server (tests/progs/rpc/ofi_rpc_server) against 6,656 replay clients for 10 ms of
# virtual time, and the modelled server on the same scenario, same run (wall time, simulated rate).
BENCH_TARGETS += bench-replay
.PHONY: bench-replay
bench-replay: build-all
	@CXISIM_BUILD=$(BUILD) $(PYTHON) tests/bench/bench_replay.py
