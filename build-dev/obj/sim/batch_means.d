build-dev/obj/sim/batch_means.o: sim/batch_means.c sim/batch_means.h \
 sim/engine.h
sim/batch_means.h:
sim/engine.h:
