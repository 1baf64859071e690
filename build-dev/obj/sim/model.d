build-dev/obj/sim/model.o: sim/model.c sim/model.h sim/cfg.h sim/engine.h \
 sim/params.h
sim/model.h:
sim/cfg.h:
sim/engine.h:
sim/params.h:
