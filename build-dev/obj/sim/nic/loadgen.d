build-dev/obj/sim/nic/loadgen.o: sim/nic/loadgen.c sim/nic/../model.h \
 sim/nic/../cfg.h sim/nic/../engine.h sim/nic/../params.h \
 sim/nic/../stats.h sim/nic/../util.h sim/nic/sw.h sim/nic/nic.h \
 sim/nic/../engine.h sim/nic/cassini.h
sim/nic/../model.h:
sim/nic/../cfg.h:
sim/nic/../engine.h:
sim/nic/../params.h:
sim/nic/../stats.h:
sim/nic/../util.h:
sim/nic/sw.h:
sim/nic/nic.h:
sim/nic/../engine.h:
sim/nic/cassini.h:
