build-dev/obj/sim/fabric/dragonfly.o: sim/fabric/dragonfly.c \
 sim/fabric/dragonfly.h sim/fabric/../engine.h sim/fabric/../pool.h \
 sim/fabric/../rng.h sim/fabric/fabric.h sim/fabric/../model.h \
 sim/fabric/../cfg.h sim/fabric/../engine.h sim/fabric/../params.h \
 sim/fabric/../stats.h sim/fabric/../util.h
sim/fabric/dragonfly.h:
sim/fabric/../engine.h:
sim/fabric/../pool.h:
sim/fabric/../rng.h:
sim/fabric/fabric.h:
sim/fabric/../model.h:
sim/fabric/../cfg.h:
sim/fabric/../engine.h:
sim/fabric/../params.h:
sim/fabric/../stats.h:
sim/fabric/../util.h:
