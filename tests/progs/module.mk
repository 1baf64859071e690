# The libfabric RPC service of the replay tests (tests/progs/rpc/): ofi_rpc_server, a real server that
# behaves as Mercury does on cxi, and ofi_rpc_client, the client whose run `cxisim capture` records.
RPC_PROG_SRCS := $(wildcard tests/progs/rpc/ofi_rpc_*.c)
RPC_PROGS := $(RPC_PROG_SRCS:tests/progs/rpc/%.c=$(BUILD)/tests/rpc/%)
ALL_TARGETS += $(RPC_PROGS)

$(BUILD)/tests/rpc/%: tests/progs/rpc/%.c tests/progs/rpc/ofi_rpc.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) -lfabric
