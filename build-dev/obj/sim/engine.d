build-dev/obj/sim/engine.o: sim/engine.c sim/engine.h sim/evq.h \
 sim/pool.h sim/stats.h sim/util.h
sim/engine.h:
sim/evq.h:
sim/pool.h:
sim/stats.h:
sim/util.h:
