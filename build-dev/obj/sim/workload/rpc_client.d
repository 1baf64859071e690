build-dev/obj/sim/workload/rpc_client.o: sim/workload/rpc_client.c \
 sim/workload/../model.h sim/workload/../cfg.h sim/workload/../engine.h \
 sim/workload/../params.h sim/workload/../rng.h \
 sim/workload/../timeseries.h sim/workload/../util.h sim/workload/bulk.h \
 sim/workload/rpc.h sim/workload/../engine.h sim/workload/../nic/sw.h \
 sim/workload/../nic/nic.h sim/workload/../nic/../engine.h \
 sim/workload/../nic/cassini.h sim/workload/../stats.h \
 sim/workload/rpc_client.h sim/workload/../cfg.h \
 sim/workload/../fabric/fabric.h sim/workload/../fabric/../engine.h \
 sim/workload/rpc_server.h sim/workload/../batch_means.h \
 sim/workload/../pool.h
sim/workload/../model.h:
sim/workload/../cfg.h:
sim/workload/../engine.h:
sim/workload/../params.h:
sim/workload/../rng.h:
sim/workload/../timeseries.h:
sim/workload/../util.h:
sim/workload/bulk.h:
sim/workload/rpc.h:
sim/workload/../engine.h:
sim/workload/../nic/sw.h:
sim/workload/../nic/nic.h:
sim/workload/../nic/../engine.h:
sim/workload/../nic/cassini.h:
sim/workload/../stats.h:
sim/workload/rpc_client.h:
sim/workload/../cfg.h:
sim/workload/../fabric/fabric.h:
sim/workload/../fabric/../engine.h:
sim/workload/rpc_server.h:
sim/workload/../batch_means.h:
sim/workload/../pool.h:
