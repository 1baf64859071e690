build-dev/obj/sim/nic/nic.o: sim/nic/nic.c sim/nic/../model.h \
 sim/nic/../cfg.h sim/nic/../engine.h sim/nic/../params.h \
 sim/nic/../timeseries.h sim/nic/../util.h sim/nic/nic_impl.h \
 sim/nic/../engine.h sim/nic/../fabric/fabric.h \
 sim/nic/../fabric/../engine.h sim/nic/../pool.h sim/nic/../stats.h \
 sim/nic/nic.h sim/nic/cassini.h
sim/nic/../model.h:
sim/nic/../cfg.h:
sim/nic/../engine.h:
sim/nic/../params.h:
sim/nic/../timeseries.h:
sim/nic/../util.h:
sim/nic/nic_impl.h:
sim/nic/../engine.h:
sim/nic/../fabric/fabric.h:
sim/nic/../fabric/../engine.h:
sim/nic/../pool.h:
sim/nic/../stats.h:
sim/nic/nic.h:
sim/nic/cassini.h:
