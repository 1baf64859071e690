build-dev/obj/sim/fabric/congestion.o: sim/fabric/congestion.c \
 sim/fabric/../stats.h sim/fabric/dragonfly.h sim/fabric/../engine.h \
 sim/fabric/../pool.h sim/fabric/../rng.h sim/fabric/fabric.h
sim/fabric/../stats.h:
sim/fabric/dragonfly.h:
sim/fabric/../engine.h:
sim/fabric/../pool.h:
sim/fabric/../rng.h:
sim/fabric/fabric.h:
