build-dev/obj/sim/fabric/direct.o: sim/fabric/direct.c \
 sim/fabric/../model.h sim/fabric/../cfg.h sim/fabric/../engine.h \
 sim/fabric/../params.h sim/fabric/../stats.h sim/fabric/../util.h \
 sim/fabric/fabric.h sim/fabric/../engine.h
sim/fabric/../model.h:
sim/fabric/../cfg.h:
sim/fabric/../engine.h:
sim/fabric/../params.h:
sim/fabric/../stats.h:
sim/fabric/../util.h:
sim/fabric/fabric.h:
sim/fabric/../engine.h:
