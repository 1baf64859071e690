build-dev/obj/sim/util.o: sim/util.c sim/util.h
sim/util.h:
