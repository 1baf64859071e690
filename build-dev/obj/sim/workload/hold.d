build-dev/obj/sim/workload/hold.o: sim/workload/hold.c \
 sim/workload/../model.h sim/workload/../cfg.h sim/workload/../engine.h \
 sim/workload/../params.h sim/workload/../rng.h sim/workload/../stats.h \
 sim/workload/../util.h
sim/workload/../model.h:
sim/workload/../cfg.h:
sim/workload/../engine.h:
sim/workload/../params.h:
sim/workload/../rng.h:
sim/workload/../stats.h:
sim/workload/../util.h:
