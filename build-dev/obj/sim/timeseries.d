build-dev/obj/sim/timeseries.o: sim/timeseries.c sim/timeseries.h \
 sim/engine.h sim/util.h
sim/timeseries.h:
sim/engine.h:
sim/util.h:
