build-dev/obj/sim/rng.o: sim/rng.c sim/rng.h
sim/rng.h:
