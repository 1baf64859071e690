# NIC model benchmarks (make bench): 8-byte Put message rate, wall cost vs posted LEs, provider-layer rate.
BENCH_NIC := $(BUILD)/bench/bench_nic
ALL_TARGETS += $(BENCH_NIC)
BENCH_TARGETS += bench-nic

$(BENCH_NIC): $(BUILD)/obj/tests/bench/bench_nic.o $(SIM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

.PHONY: bench-nic
bench-nic: $(BENCH_NIC)
	@$(BENCH_NIC)
