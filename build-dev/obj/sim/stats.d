build-dev/obj/sim/stats.o: sim/stats.c sim/stats.h sim/util.h
sim/stats.h:
sim/util.h:
