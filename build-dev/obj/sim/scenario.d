build-dev/obj/sim/scenario.o: sim/scenario.c sim/scenario.h sim/engine.h \
 sim/cfg.h sim/model.h sim/params.h sim/stats.h sim/timeseries.h \
 sim/util.h
sim/scenario.h:
sim/engine.h:
sim/cfg.h:
sim/model.h:
sim/params.h:
sim/stats.h:
sim/timeseries.h:
sim/util.h:
