build-dev/obj/sim/fabric/telemetry.o: sim/fabric/telemetry.c \
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
