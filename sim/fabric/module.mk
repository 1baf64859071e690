# Fabric area: the topology export tool, the SimGrid flow runner (cross-check and speed peer), the fabric
# benchmarks.
FABRIC_TOPO := $(BUILD)/bin/cxisim-fabric-topo
SG_FLOWS := $(BUILD)/bin/sg-flows
BENCH_FABRIC := $(BUILD)/bench/bench_fabric_build
ALL_TARGETS += $(FABRIC_TOPO) $(SG_FLOWS) $(BENCH_FABRIC)
BENCH_TARGETS += bench-fabric

$(FABRIC_TOPO): $(BUILD)/obj/sim/fabric/topo_main.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SG_FLOWS): $(BUILD)/obj/sim/fabric/simgrid/sg_flows_main.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lsimgrid

$(BENCH_FABRIC): $(BUILD)/obj/tests/bench/bench_fabric_build.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: bench-fabric
bench-fabric: $(ENGINE) $(FABRIC_TOPO) $(SG_FLOWS) $(BENCH_FABRIC)
	@CXISIM_BUILD=$(BUILD) $(PYTHON) tests/bench/bench_fabric.py
