build-dev/obj/sim/fabric/endpoint.o: sim/fabric/endpoint.c \
 sim/fabric/../stats.h sim/fabric/../util.h sim/fabric/dragonfly.h \
 sim/fabric/../engine.h sim/fabric/../pool.h sim/fabric/../rng.h \
 sim/fabric/fabric.h
sim/fabric/../stats.h:
sim/fabric/../util.h:
sim/fabric/dragonfly.h:
sim/fabric/../engine.h:
sim/fabric/../pool.h:
sim/fabric/../rng.h:
sim/fabric/fabric.h:
