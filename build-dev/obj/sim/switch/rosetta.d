build-dev/obj/sim/switch/rosetta.o: sim/switch/rosetta.c \
 sim/switch/../fabric/dragonfly.h sim/switch/../fabric/../engine.h \
 sim/switch/../fabric/../pool.h sim/switch/../fabric/../rng.h \
 sim/switch/../fabric/fabric.h sim/switch/../stats.h sim/switch/../util.h
sim/switch/../fabric/dragonfly.h:
sim/switch/../fabric/../engine.h:
sim/switch/../fabric/../pool.h:
sim/switch/../fabric/../rng.h:
sim/switch/../fabric/fabric.h:
sim/switch/../stats.h:
sim/switch/../util.h:
