build-dev/obj/sim/evq.o: sim/evq.c sim/evq.h sim/util.h
sim/evq.h:
sim/util.h:
