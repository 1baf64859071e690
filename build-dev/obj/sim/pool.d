build-dev/obj/sim/pool.o: sim/pool.c sim/pool.h sim/util.h
sim/pool.h:
sim/util.h:
