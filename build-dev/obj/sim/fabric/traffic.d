build-dev/obj/sim/fabric/traffic.o: sim/fabric/traffic.c \
 sim/fabric/../model.h sim/fabric/../cfg.h sim/fabric/../engine.h \
 sim/fabric/../params.h sim/fabric/../pool.h sim/fabric/../rng.h \
 sim/fabric/../stats.h sim/fabric/../util.h sim/fabric/dragonfly.h \
 sim/fabric/../engine.h sim/fabric/fabric.h
sim/fabric/../model.h:
sim/fabric/../cfg.h:
sim/fabric/../engine.h:
sim/fabric/../params.h:
sim/fabric/../pool.h:
sim/fabric/../rng.h:
sim/fabric/../stats.h:
sim/fabric/../util.h:
sim/fabric/dragonfly.h:
sim/fabric/../engine.h:
sim/fabric/fabric.h:
