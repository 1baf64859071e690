build-dev/obj/sim/fabric/fabric.o: sim/fabric/fabric.c \
 sim/fabric/../model.h sim/fabric/../cfg.h sim/fabric/../engine.h \
 sim/fabric/../params.h sim/fabric/../util.h sim/fabric/fabric.h \
 sim/fabric/../engine.h
sim/fabric/../model.h:
sim/fabric/../cfg.h:
sim/fabric/../engine.h:
sim/fabric/../params.h:
sim/fabric/../util.h:
sim/fabric/fabric.h:
sim/fabric/../engine.h:
